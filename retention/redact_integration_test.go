//go:build integration

package retention_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	rathpkg "github.com/gorath/rath"
	"github.com/gorath/rath/bundle"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/retention"
)

// eachStore runs body in parallel subtests, one per store, each with a
// fresh store of its own.
func eachStore(t *testing.T, body func(t *testing.T, c *cli)) {
	t.Parallel()
	for _, backend := range bothStores {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			body(t, newCLI(t, backend))
		})
	}
}

// cli runs rath on a store (its global flags) as a process of its own.
type cli struct {
	t     *testing.T
	flags []string
	env   []string
}

func newCLI(t *testing.T, backend string) *cli {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"providers": {}}`), 0o644)
	return &cli{t: t, flags: storeFlags(t, backend), env: []string{"RATH_HOME=" + home, "NO_COLOR=1"}}
}

func (c *cli) command(argv ...string) *exec.Cmd {
	cmd := exec.Command(rathBin(c.t), append(slices.Clone(c.flags), argv...)...)
	cmd.Dir = c.t.TempDir()
	cmd.Env = append(os.Environ(), c.env...)
	return cmd
}

func (c *cli) run(argv ...string) result {
	c.t.Helper()
	return runCmd(c.t, c.command(argv...))
}

// must runs a command that must succeed and returns its stdout.
func (c *cli) must(argv ...string) string {
	c.t.Helper()
	r := c.run(argv...)
	if r.code != 0 {
		c.t.Fatalf("rath %s: exit %d\n%s%s", strings.Join(argv, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// dir is the store's directory (the --dir flag).
func (c *cli) dir() string { return c.flags[1] }

// dsn is the store's PostgreSQL DSN, or "".
func (c *cli) dsn() string {
	if i := slices.Index(c.flags, "--dsn"); i >= 0 {
		return c.flags[i+1]
	}
	return ""
}

// open opens the store in this process, as a program using rath does.
func (c *cli) open() *rathpkg.Runtime {
	c.t.Helper()
	rt, err := rathpkg.OpenWith(c.t.Context(), rathpkg.Options{Dir: c.dir(), DSN: c.dsn()})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { rt.Close() })
	return rt
}

// checkStore requires verify to pass (exit 0) and rebuild to succeed.
func (c *cli) checkStore(what string) string {
	c.t.Helper()
	r := c.run("verify")
	if r.code != 0 {
		c.t.Fatalf("%s: verify: exit %d\n%s%s", what, r.code, r.stdout, r.stderr)
	}
	if rb := c.run("rebuild"); rb.code != 0 {
		c.t.Fatalf("%s: rebuild: exit %d\n%s%s", what, rb.code, rb.stdout, rb.stderr)
	}
	return r.stdout
}

// demoRun records the demo run and returns its id and output session.
func (c *cli) demoRun() (run, output string) {
	c.t.Helper()
	c.must("demo")
	var runs []struct {
		ID     string `json:"id"`
		Output string `json:"output_session"`
	}
	if err := json.Unmarshal([]byte(c.must("runs", "--json")), &runs); err != nil || len(runs) != 1 || runs[0].Output == "" {
		c.t.Fatalf("runs: %v %+v", err, runs)
	}
	return runs[0].ID, runs[0].Output
}

// sessionShape is what a session's structure is: what a redaction keeps.
type sessionShape struct {
	ID      string   `json:"id"`
	Kind    string   `json:"kind"`
	Chunks  int      `json:"chunks"`
	Version int      `json:"version"`
	Parents []string `json:"parents"`
	Source  string   `json:"source"`
}

func (c *cli) shapes() []sessionShape {
	c.t.Helper()
	var out []sessionShape
	if err := json.Unmarshal([]byte(c.must("sessions", "--json")), &out); err != nil {
		c.t.Fatal(err)
	}
	return out
}

// A console user forks and merges sessions of a run (and a program
// detaches one); an erasure of the run then redacts it. The store must
// stay whole: redact exits 0, verify passes and lists the redaction,
// rebuild succeeds and every session keeps its kind, length, version and
// lineage; the descendants read the run's content as redacted and their
// own as written.
func TestRedact_RunWithForksAndMergesKeepsTheStoreWhole(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cli) {
		run, output := c.demoRun()
		var input string
		for _, s := range c.shapes() {
			if s.Kind == "root" {
				input = s.ID
			}
		}
		fork := strings.TrimSpace(c.must("fork", output))
		c.must("append", fork, "--role", "user", "a follow-up of my own")
		rootFork := strings.TrimSpace(c.must("fork", input))
		merged := strings.TrimSpace(c.must("merge", fork, output))
		// A program using rath detaches one (no CLI does).
		rt := c.open()
		src, err := rt.Session(t.Context(), output)
		if err != nil {
			t.Fatal(err)
		}
		det, err := src.Detach(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		detached := det.ID()
		rt.Close()
		before := c.shapes()
		if !strings.Contains(c.must("show", fork), "The reviewer rejected") {
			t.Fatal("the fork does not show the run's content before the redaction")
		}

		r := c.run("redact", "--run", run, "--reason", "erasure request 7", "--as", "dpo")
		if r.code != 0 {
			t.Fatalf("redact --run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		out := c.checkStore("after redact --run")
		if !strings.Contains(out, "by dpo: erasure request 7") {
			t.Fatalf("verify does not list the redaction:\n%s", out)
		}
		if after := c.shapes(); !slices.EqualFunc(before, after, func(a, b sessionShape) bool {
			return a.ID == b.ID && a.Kind == b.Kind && a.Chunks == b.Chunks && a.Version == b.Version && slices.Equal(a.Parents, b.Parents) && a.Source == b.Source
		}) {
			t.Fatalf("the sessions' structure changed:\nbefore %+v\nafter  %+v", before, after)
		}
		for _, id := range []string{fork, merged, detached, output} {
			shown := c.must("show", id)
			if strings.Contains(shown, "The reviewer rejected") || !strings.Contains(shown, "[redacted]") {
				t.Fatalf("show %s after the redaction:\n%s", id, shown)
			}
		}
		if shown := c.must("show", fork); !strings.Contains(shown, "a follow-up of my own") {
			t.Fatalf("the fork lost its own chunk:\n%s", shown)
		}
		// The fork of the input keeps the input's first chunk (not the
		// run's) and reads the run's chunks as redacted.
		if shown := c.must("show", rootFork); !strings.Contains(shown, "Please fix issue 17") || !strings.Contains(shown, "[redacted]") {
			t.Fatalf("show %s:\n%s", rootFork, shown)
		}
		// The descendants stay usable: a fork of the fork, appended to.
		again := strings.TrimSpace(c.must("fork", fork))
		c.must("append", again, "--role", "user", "still going")
		c.checkStore("after forking the redacted fork")
	})
}

// forkingArchiver forks a session of the run it archives, from another
// process, before it writes the archive: a console user forking while a
// retention runs.
type forkingArchiver struct {
	c       *cli
	session string
	forked  string
}

func (a *forkingArchiver) Archive(ctx context.Context, rt *rathpkg.Runtime, run, dir string) (int64, error) {
	if a.forked == "" {
		a.forked = strings.TrimSpace(a.c.must("fork", a.session))
	}
	return retention.LogArchiver{}.Archive(ctx, rt, run, dir)
}

// A fork made while retain archives its run is seen when the redaction
// commits: the run is skipped (its archive removed), nothing is redacted,
// the fork keeps its content and the store verifies.
func TestRetain_ForkDuringTheArchiveSkipsTheRun(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cli) {
		run, output := c.demoRun()
		rt := c.open()
		archive := filepath.Join(t.TempDir(), "archive")
		arch := &forkingArchiver{c: c, session: output}
		rep, err := retention.Retain(t.Context(), rt, retention.Options{CompletedBefore: time.Now().Add(time.Minute), ArchiveTo: archive, Archiver: arch})
		if err != nil {
			t.Fatalf("retain: %v", err)
		}
		if arch.forked == "" {
			t.Fatal("the archiver did not fork")
		}
		if len(rep.Runs) != 0 || len(rep.Skipped) != 1 || rep.Skipped[0].Run != run || !strings.Contains(rep.Skipped[0].Reason, arch.forked) {
			t.Fatalf("report %+v: want %s skipped for %s", rep, run, arch.forked)
		}
		if ents, _ := os.ReadDir(archive); len(ents) != 0 {
			t.Fatalf("the archive of the run not retained is left: %v", ents)
		}
		rt.Close()
		out := c.checkStore("after the retention")
		if strings.Contains(out, "redacted") {
			t.Fatalf("something was redacted:\n%s", out)
		}
		if shown := c.must("show", arch.forked); !strings.Contains(shown, "The reviewer rejected") {
			t.Fatalf("the fork lost its content:\n%s", shown)
		}
	})
}

const approveCassette = `{"scripted": true, "description": "Scripted: run a shell command, then report.", "responses": [
 {"tool_calls": [{"id": "c1", "name": "run_shell_command", "arguments": {"cmd": "echo approved > out.txt && cat out.txt"}}]},
 {"expect": "approved", "content": "The command ran and wrote out.txt."}
]}`

// approvedRun records a run whose shell command waited for approval, was
// approved by another process, and ran on resume. It returns the run and
// the seq of its approval request.
func (c *cli) approvedRun() (run string, request int64) {
	c.t.Helper()
	ws := filepath.Join(c.t.TempDir(), "ws")
	os.MkdirAll(ws, 0o755)
	cas := filepath.Join(c.t.TempDir(), "approve.json")
	os.WriteFile(cas, []byte(approveCassette), 0o644)
	r := c.run("run", "--cassette", cas, "--workspace", ws, "--tools", "run_shell_command", "--approve", "run_shell_command", "--no-stream", "write", "out")
	m := regexp.MustCompile(`run: (run-[0-9a-f]+)`).FindStringSubmatch(r.stdout)
	id := regexp.MustCompile(`apr-[0-9a-f]{16}`).FindString(r.stderr)
	if r.code != 5 || m == nil || id == "" {
		c.t.Fatalf("run: exit %d, want 5 waiting for approval\n%s%s", r.code, r.stdout, r.stderr)
	}
	c.must("approve", id, "--as", "alice")
	c.must("resume", m[1])
	for _, line := range strings.Split(strings.TrimSpace(c.must("events", "--json")), "\n") {
		var ev struct {
			Seq  int64  `json:"seq"`
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			c.t.Fatalf("events --json: %v: %s", err, line)
		}
		if ev.Type == events.TypeApprovalRequested {
			request = ev.Seq
		}
	}
	if request == 0 {
		c.t.Fatal("no approval.requested in the log")
	}
	return m[1], request
}

// A run whose tool call a person approved is erased three ways: its
// events (redact --run), by retention, and its request alone (the state
// an erasure left before decisions went with their requests). Each
// leaves an honest store that verifies and rebuilds.
func TestRedact_ApprovedToolCallVerifiesAndRebuilds(t *testing.T) {
	t.Parallel()
	for _, backend := range bothStores {
		for _, how := range []string{"redact-run", "retain", "request-only"} {
			t.Run(backend+"/"+how, func(t *testing.T) {
				t.Parallel()
				c := newCLI(t, backend)
				run, request := c.approvedRun()
				var r result
				switch how {
				case "redact-run":
					r = c.run("redact", "--run", run, "--reason", "erasure")
				case "retain":
					r = c.run("retain", "--completed-before", "0d")
				default:
					r = c.run("redact", "--event", strconv.FormatInt(request, 10), "--reason", "erasure")
				}
				if r.code != 0 {
					t.Fatalf("%s: exit %d\n%s%s", how, r.code, r.stdout, r.stderr)
				}
				out := c.checkStore(how)
				if !strings.Contains(out, "redacted at seq") {
					t.Fatalf("verify does not list the redaction:\n%s", out)
				}
				if how == "retain" && !strings.Contains(c.must("runs"), run) {
					t.Fatal("the retained run is no longer listed")
				}
			})
		}
	}
}

// holdWrites takes the store's write lock from this process, as a long
// append of another process would, until release is called: on SQLite
// the write gate every writer passes, on PostgreSQL the row every append
// locks.
func holdWrites(t *testing.T, c *cli) (release func()) {
	t.Helper()
	if dsn := c.dsn(); dsn != "" {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := db.BeginTx(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var one int
		if err := tx.QueryRow(`SELECT id FROM chain_lock WHERE id = 1 FOR UPDATE`).Scan(&one); err != nil {
			t.Fatal(err)
		}
		return func() { tx.Rollback(); db.Close() }
	}
	f, err := os.OpenFile(filepath.Join(c.dir(), "rath.db"+eventlog.WriteGateSuffix), os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }
}

// A retain SIGKILLed after it wrote a run's archive and before its
// redaction committed leaves the run whole in the store, and the next
// retain archives it again and retains it: no directory left behind
// wedges it, and nothing is half retained.
func TestRetain_KilledAfterTheArchiveRecovers(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cli) {
		keys := filepath.Join(t.TempDir(), "keys")
		c.must("keys", "generate", "--out", keys)
		c.env = append(c.env, "RATH_SIGNING_KEY="+filepath.Join(keys, "signer.key"))
		run, _ := c.demoRun()
		c.must("checkpoint", "--sign")
		archive := filepath.Join(t.TempDir(), "archive")

		release := holdWrites(t, c)
		cmd := c.command("retain", "--completed-before", "0d", "--archive-to", archive)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The archive is in place before the redaction, which waits for
		// the write lock this test holds: kill the retain there.
		deadline := time.Now().Add(2 * time.Minute)
		for {
			if _, err := os.Stat(filepath.Join(archive, run)); err == nil {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the retain wrote no archive:\n%s", out.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		release()

		if v := c.checkStore("after the killed retain"); strings.Contains(v, "redacted") {
			t.Fatalf("the killed retain redacted something:\n%s", v)
		}
		r := c.run("retain", "--completed-before", "0d", "--archive-to", archive)
		if r.code != 0 || !strings.Contains(r.stdout, "retained "+run) {
			t.Fatalf("the next retain: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if v := c.checkStore("after the next retain"); !strings.Contains(v, "by rath retain: retention") {
			t.Fatalf("verify does not list the retention:\n%s", v)
		}
		ents, _ := os.ReadDir(archive)
		if len(ents) != 1 || ents[0].Name() != run {
			t.Fatalf("the archive directory holds %v, want only %s", ents, run)
		}
		vkey, err := os.ReadFile(filepath.Join(keys, "verifier.vkey"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bundle.Open(filepath.Join(archive, run), strings.TrimSpace(string(vkey))); err != nil {
			t.Fatalf("the archive does not verify: %v", err)
		}
	})
}
