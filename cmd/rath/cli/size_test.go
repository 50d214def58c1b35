//go:build !soak

package cli

// serveRequests is how many requests TestServe_TenantsRandomRequests
// makes in make test; make soak makes 10,000 (size_soak_test.go).
const serveRequests = 1000

// sweepRuns is how many runs of one subject TestErase_CanarySweep makes
// in make test; make soak makes 100 (size_soak_test.go).
const sweepRuns = 10
