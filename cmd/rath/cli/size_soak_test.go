//go:build soak

package cli

import "time"

// serveRequests is how many requests TestServe_TenantsRandomRequests
// makes under make soak.
const serveRequests = 10000

// sweepRuns is how many runs of one subject TestErase_CanarySweep makes
// under make soak.
const sweepRuns = 100

// eraseChaosRuns is how much TestErase_ChaosWithWorkersAndAppenders does: minutes of it.
var eraseChaosRuns = eraseChaosSize{subjects: 8, submitted: 12, inline: 3, window: 20 * time.Second}
