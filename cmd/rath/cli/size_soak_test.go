//go:build soak

package cli

// serveRequests is how many requests TestServe_TenantsRandomRequests
// makes under make soak.
const serveRequests = 10000

// sweepRuns is how many runs of one subject TestErase_CanarySweep makes
// under make soak.
const sweepRuns = 100
