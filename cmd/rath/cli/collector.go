package cli

import (
	"os"
	"runtime/debug"
)

// Collector percents for commands that are all their process does. A
// worker's live heap is small (about 10 MB running four runs at a time),
// so collecting at 5 times it rather than twice costs some 10 MB of memory
// and saved 6% of a worker's CPU at one worker and 15-20% at four
// (docs/PERFORMANCE.md). A submit lives for milliseconds: its one
// collection collected what the exit frees anyway.
const (
	workerGCPercent = 400
	submitGCPercent = 800
)

// collectLess sets the garbage collector's percent for a command that is
// all its process does. A program that runs the CLI inside itself keeps
// its own setting, and so does an operator who set GOGC. Not restored when
// the command ends: setting it collects at once.
func (a *app) collectLess(percent int) {
	if !a.ownsProcess || os.Getenv("GOGC") != "" {
		return
	}
	debug.SetGCPercent(percent)
}
