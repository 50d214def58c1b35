//go:build !soak

package cli

// serveRequests is how many requests TestServe_TenantsRandomRequests
// makes in make test; make soak makes 10,000 (size_soak_test.go).
const serveRequests = 1000
