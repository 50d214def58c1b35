//go:build !unix

package eventlog

import "time"

// WriteGateSuffix names the file of the write gate, which is kept on Unix
// systems only (writegate_unix.go); elsewhere SQLite's busy handler alone
// orders the writers.
const WriteGateSuffix = "-writegate"

type writeGate struct{}

func newWriteGate(string) *writeGate             { return nil }
func (g *writeGate) acquire(time.Duration) error { return nil }
func (g *writeGate) release()                    {}
func (g *writeGate) pass(time.Duration) error    { return nil }
func (g *writeGate) close()                      {}
