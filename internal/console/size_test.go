//go:build !soak

package console_test

// randomRequests is how many requests the randomized tenant tests make:
// a bounded run in make test; make soak makes 10,000 (size_soak_test.go).
const randomRequests = 1000
