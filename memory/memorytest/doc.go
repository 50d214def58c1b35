// Package memorytest is the conformance suite for implementations of
// memory.Memory: [Run] checks read-your-writes, namespace isolation,
// tombstones, listing, recorded recalls and commits against any
// implementation, given a fresh instance per test.
//
// It imports memory, session and events, and only the standard testing
// package besides; tests of implementations import it.
package memorytest
