package cli

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun_UsageErrors(t *testing.T) {
	w := seed(t)
	tests := []struct {
		name string
		argv []string
		want string
		hint string
	}{
		{"unknown command", []string{"bogus"}, `unknown command "bogus"`, "Try: rath --help"},
		{"misspelt command", []string{"sesions"}, `unknown command "sesions"`, "Try: rath sessions"},
		{"unknown flag", []string{"sessions", "--nope"}, "unknown flag: --nope\n", "Try: rath sessions --json"},
		{"misspelt flag", []string{"runs", "--stauts", "failed"}, "unknown flag: --stauts (did you mean --status?)", "Try: rath runs"},
		{"misspelt flag with a value", []string{"events", "--strem=x"}, "unknown flag: --strem (did you mean --stream?)", "Try: rath events"},
		{"misspelt inherited flag", []string{"sessions", "--dri", "x"}, "unknown flag: --dri (did you mean --dir?)", "Try: rath sessions"},
		{"unknown shorthand", []string{"sessions", "-z"}, "unknown shorthand flag: 'z' in -z\n", "Try: rath sessions"},
		{"show without id", []string{"show"}, "accepts 1 arg(s)", "Try: rath show "},
		{"extra argument", []string{"sessions", "x"}, "unknown command", "Try: rath sessions"},
		{"bad graph format", []string{"graph", "--format", "svg"}, `--format "svg"`, "Try: rath graph"},
		{"bad head", []string{"verify", "--head", "nonsense"}, "--head", "Try: rath verify --head"},
		{"bad seq", []string{"show", w.root, "--at", "x"}, "invalid argument", "Try: rath show"},
		{"negative from", []string{"events", "--from", "-3"}, "must not be negative", "Try: rath events"},
		{"unknown migrate command", []string{"migrate", "down"}, `unknown migrate command "down"`, "Try: rath migrate status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rathCLI(t, w.dir, tt.argv...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) || !strings.Contains(r.stderr, tt.hint) {
				t.Fatalf("exit %d (want 2)\nstderr %q\nwant %q and %q", r.code, r.stderr, tt.want, tt.hint)
			}
		})
	}
}

func TestRun_NoStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "absent")
	for _, cmd := range [][]string{{"sessions"}, {"show", "s-x"}, {"graph"}, {"events"}, {"verify"}, {"rebuild"}, {"migrate", "status"}, {"export", "s-x"}} {
		r := rathCLI(t, dir, cmd...)
		if r.code != 1 || !strings.Contains(r.stderr, "no rath store in "+dir) {
			t.Fatalf("%v: exit %d stderr %q", cmd, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a reading command created %s", dir)
	}
}

func TestRun_DirFromEnv(t *testing.T) {
	w := seed(t)
	t.Setenv("RATH_DIR", w.dir)
	r := result{}
	var out, errb strings.Builder
	r.code = Run(t.Context(), Config{}, []string{"sessions"}, strings.NewReader(""), &out, &errb)
	if r.code != 0 || !strings.Contains(out.String(), w.root) {
		t.Fatalf("exit %d\n%s\n%s", r.code, out.String(), errb.String())
	}
	// --dir wins over the environment.
	other := t.TempDir()
	if r := rathCLI(t, other, "sessions"); r.code != 1 || !strings.Contains(r.stderr, other) {
		t.Fatalf("--dir ignored: %d %q", r.code, r.stderr)
	}
}

func TestRun_MigrateStatus(t *testing.T) {
	w := seed(t)
	out := mustRun(t, w.dir, "migrate", "status")
	if !strings.Contains(out, "00001_event_log.sql") || strings.Contains(out, "pending") {
		t.Fatalf("migrate status:\n%s", out)
	}
	type mig struct {
		Version int64  `json:"version"`
		Source  string `json:"source"`
		Applied bool   `json:"applied"`
	}
	ms := decodeJSON[[]mig](t, mustRun(t, w.dir, "migrate", "status", "--json"))
	if len(ms) < 2 || ms[0].Version != 1 {
		t.Fatalf("migrations = %+v", ms)
	}
	for _, m := range ms {
		if !m.Applied {
			t.Fatalf("migration %d pending in an opened store", m.Version)
		}
	}
	if out := mustRun(t, w.dir, "migrate"); !strings.Contains(out, "status") {
		t.Fatalf("migrate without a subcommand should print help:\n%s", out)
	}
}

// migrate up leaves a store complete, the job queue's tables included,
// so that no submitter or worker has to create them.
func TestRun_MigrateUpCreatesTheJobQueue(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	out := mustRun(t, dir, "migrate", "up")
	if !strings.Contains(out, "its job queue (River) is at version ") {
		t.Fatalf("migrate up:\n%s", out)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "rath.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM river_job`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("river_job after migrate up: %d, %v", n, err)
	}
	// A second run changes nothing and says so again.
	if again := mustRun(t, dir, "migrate", "up"); !strings.Contains(again, "its job queue (River) is at version ") || strings.Contains(again, "applied ") {
		t.Fatalf("migrate up again:\n%s", again)
	}
}

func TestRun_VersionAndHelp(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "unused")
	out := mustRun(t, dir, "version")
	if !strings.HasPrefix(out, "rath ") || !strings.Contains(out, "event chunk.appended v1") {
		t.Fatalf("version:\n%s", out)
	}
	type view struct {
		Version      string         `json:"version"`
		ExportFormat int            `json:"export_format"`
		EventTypes   map[string]int `json:"event_types"`
	}
	if v := decodeJSON[view](t, mustRun(t, dir, "version", "--json")); v.Version == "" || v.ExportFormat != 1 || v.EventTypes["session.imported"] != 1 {
		t.Fatalf("version --json = %+v", v)
	}
	help := mustRun(t, dir)
	for _, cmd := range []string{"sessions", "show", "graph", "events", "verify", "rebuild", "append", "fork", "merge", "export", "import", "migrate", "version"} {
		if !strings.Contains(help, "  "+cmd+" ") {
			t.Errorf("help lacks %s", cmd)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("version or help created the store")
	}
}
