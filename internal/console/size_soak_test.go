//go:build soak

package console_test

// randomRequests is how many requests the randomized tenant tests make
// under make soak.
const randomRequests = 10000
