// Package netdelay is a TCP proxy on loopback that delays each direction
// of every connection by a fixed amount, as a database on another machine
// would: cmd/fleetbench puts it between every process and PostgreSQL
// (-pg-delay) so that a benchmark waits on the network, not on the CPU.
//
// It is a delay line, not a rate limit: bytes keep flowing in order and
// each chunk read from one side is written to the other Delay after it
// was read, however many chunks are in flight. So a pipeline of N
// statements costs one delayed round trip, and N round trips cost N.
//
// # What it does not do
//
// It adds no jitter, loss or bandwidth cap, and it does not reorder.
// Delays are as precise as the Go runtime's timers on a loaded machine:
// never shorter than asked, sometimes longer.
//
// It imports nothing from rath (enforced by allowedImports in the
// repository's style_test.go).
package netdelay
