package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/gorath/rath/eventlog"
	"os"
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

// Each layer names itself once: the program's "rath: " and the root
// package's "rath: " are one prefix, not two.
func TestExitCode_ErrorsPrefixedOnce(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"library error", fmt.Errorf("rath: open %s: %w", "s/rath.db", errors.New("mkdir s: not a directory")),
			"rath: open s/rath.db: mkdir s: not a directory\n"},
		{"plain error", errors.New("no rath store in x"), "rath: no rath store in x\n"},
		{"wrapped verify failure", fmt.Errorf("rath: verify: %w", &eventlog.VerifyError{Seq: 2, Reason: "hash mismatch"}), ""},
		{"usage error", &usageError{err: errors.New(`unknown command "x"`), hint: "rath --help"},
			"rath: unknown command \"x\"\nTry: rath --help\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			exitCode(&b, tt.err)
			if strings.Count(b.String(), "rath: ") != 1 || (tt.want != "" && b.String() != tt.want) {
				t.Fatalf("printed %q, want %q with one prefix", b.String(), tt.want)
			}
		})
	}
}

// Failing commands print one "rath: ": a store with a newer schema, a
// store path that is not a directory.
func TestExitCode_RealErrorsPrefixedOnce(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "new", "x")
	db, err := sql.Open("sqlite", filepath.Join(dir, "rath.db"))
	if err != nil {
		t.Fatal(err)
	}
	exec(t, db, `INSERT INTO goose_db_version(version_id, is_applied) VALUES (999, 1)`)
	db.Close()
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir, want string
	}{
		{dir, "schema version 999"},
		{filepath.Join(notDir, "store"), "not a directory"},
	} {
		r := rathCLI(t, c.dir, "new", "y")
		if r.code != ExitFailure || !strings.Contains(r.stderr, c.want) || strings.Count(r.stderr, "rath: ") != 1 {
			t.Errorf("--dir %s: exit %d, stderr %q: want one \"rath: \" and %q", c.dir, r.code, r.stderr, c.want)
		}
	}
}
