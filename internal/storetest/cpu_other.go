//go:build !unix

package storetest

import "time"

// processCPU is zero where getrusage is not available: the benchmarks
// then report no CPU figures.
func processCPU() time.Duration { return 0 }
