package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/flow"
)

// A replay that diverges has its own exit code, distinct from "could not
// run" (1) and from a verify failure (3), in every command that replays.
func TestExitCode_ReplayDivergedIs4(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	if _, err := recordTally(t.Context(), dir, -1); err != nil {
		t.Fatal(err)
	}
	// The registered workflow has another system prompt than the record:
	// the first request differs, so the replay diverges.
	p, err := flow.ResolveProvider(flow.Provider{Client: tallyModel{}, Model: "tally"}, flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: "/none"})
	if err != nil {
		t.Fatal(err)
	}
	changed, err := flow.NewAgent("You count differently.", p)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Setup: func(_ context.Context, rt *rath.Runtime) error {
		rt.Register("tally", changed)
		return nil
	}}
	for _, argv := range [][]string{
		{"replay", "run-tally--1"},
		{"dossier", "--replay", "--format", "md", "run-tally--1"},
	} {
		var out, errb strings.Builder
		code := Run(t.Context(), cfg, append([]string{"--dir", store}, argv...), strings.NewReader(""), &out, &errb)
		if code != ExitDiverged || !strings.Contains(errb.String(), "diverged") {
			t.Errorf("%v: exit %d, want %d\nstdout: %s\nstderr: %s", argv, code, ExitDiverged, out.String(), errb.String())
		}
	}
}
