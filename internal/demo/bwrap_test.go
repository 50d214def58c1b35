//go:build integration

package demo_test

import "testing"

// The same demo with every tool call inside bubblewrap.
func TestDemo_Bwrap(t *testing.T) { checkDemo(t, "bwrap") }
