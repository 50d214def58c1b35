//go:build !linux

package storetest

import "time"

// postgresCPU is zero where /proc is not available: the benchmarks then
// report no server CPU figures.
func postgresCPU() time.Duration { return 0 }
