//go:build integration

package demo_test

import "testing"

// The same demo with every tool call inside bubblewrap.
func TestDemo_Bwrap(t *testing.T) { checkDemo(t, "bwrap") }

// And its tools reproduce inside bubblewrap too.
func TestDemo_BwrapReplayWithLiveTools(t *testing.T) { checkLiveTools(t, "bwrap") }
