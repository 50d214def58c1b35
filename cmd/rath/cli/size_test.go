//go:build !soak

package cli

import "time"

// serveRequests is how many requests TestServe_TenantsRandomRequests
// makes in make test; make soak makes 10,000 (size_soak_test.go).
const serveRequests = 1000

// sweepRuns is how many runs of one subject TestErase_CanarySweep makes
// in make test; make soak makes 100 (size_soak_test.go).
const sweepRuns = 10

// eraseChaosRuns is how much TestErase_ChaosWithWorkersAndAppenders does: a few seconds of chaos a store.
var eraseChaosRuns = eraseChaosSize{subjects: 4, submitted: 3, inline: 1, window: 1500 * time.Millisecond}
