package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session"
)

// roleEnv makes the test binary one process of
// TestMultiProcess_AppendRebuildVerify: "append DIR INDEX", "rebuild DIR"
// or "verify DIR" (which alternates verify and rebuild --check). Rebuilders
// and verifiers loop until DIR/stop exists.
const roleEnv = "RATH_CLI_TEST_MULTIPROCESS_ROLE"

// Bounds of the multi-process test: appending processes and appends each.
const (
	mpWriters = 4
	mpAppends = 150
)

// multiprocessChild runs one role and returns the process's exit code. It
// prints one summary line on stdout and every failure on stderr.
func multiprocessChild(role string) int {
	f := strings.Fields(role)
	if len(f) < 2 {
		fmt.Fprintln(os.Stderr, "bad role", role)
		return 2
	}
	ctx := context.Background()
	dir := f[1]
	switch f[0] {
	case "append":
		return mpAppend(ctx, dir, f[2])
	case "rebuild", "verify":
		// The verifier also runs the read-only rebuild --check, which must
		// compare one snapshot even while others append.
		cmds := [][]string{{f[0]}}
		if f[0] == "verify" {
			cmds = append(cmds, []string{"rebuild", "--check"})
		}
		runs, failed := 0, 0
		for {
			_, err := os.Stat(filepath.Join(dir, "stop"))
			stopping := err == nil
			var out, errb bytes.Buffer
			argv := cmds[runs%len(cmds)]
			if code := Run(ctx, Config{}, append([]string{"--dir", dir}, argv...), strings.NewReader(""), &out, &errb); code != ExitOK {
				failed++
				fmt.Fprintf(os.Stderr, "rath %s: exit %d: %s%s\n", strings.Join(argv, " "), code, errb.String(), out.String())
			}
			runs++
			if stopping {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		fmt.Printf("%s runs %d failed %d\n", f[0], runs, failed)
		if failed > 0 {
			return 3
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "bad role", role)
	return 2
}

// mpAppend records a run whose session gets mpAppends writes: chunks, and
// every tenth a provider call with a request blob; a failed write is counted and the session
// reloaded, so one failure does not hide the next.
func mpAppend(ctx context.Context, dir, index string) int {
	run := "run-mp-" + index
	inRun := eventlog.Scope{Run: events.RunRef{ID: run, Seed: run}}
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 3
	}
	defer rt.Close()
	if _, err := rt.Store().In(inRun).Append(ctx, run, eventlog.NoStream, events.RunStarted{Run: run, Workflow: "multiprocess", Seed: run}); err != nil {
		fmt.Fprintln(os.Stderr, "run.started:", err)
		return 3
	}
	s, err := rt.Sessions().In(inRun).New(ctx, session.OriginUser, session.Chunk{Role: events.RoleUser, Content: "writer " + index})
	if err != nil {
		fmt.Fprintln(os.Stderr, "new session:", err)
		return 3
	}
	failed := 0
	for i := range mpAppends {
		var next *session.Session
		if i%10 == 9 {
			// Like a real call, with its request stored as a blob.
			req := []byte(fmt.Sprintf(`{"model":"m","writer":%q,"i":%d}`, index, i))
			next, err = s.Emit(ctx, [][]byte{req}, events.ProviderCalled{Session: s.ID(), Model: "m", RequestRef: eventlog.BlobHash(req),
				Usage: events.Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5}})
		} else {
			next, err = s.Append(ctx, session.Chunk{Role: events.RoleAssistant, Author: "writer", Content: fmt.Sprintf("line %d of %s", i, index)})
		}
		if err != nil {
			failed++
			fmt.Fprintf(os.Stderr, "append %d: %v\n", i, err)
			if next, err = rt.Session(ctx, s.ID()); err != nil {
				fmt.Fprintln(os.Stderr, "reload:", err)
				return 3
			}
			next = next.In(inRun)
		}
		s = next
	}
	if _, err := rt.Store().In(inRun).Append(ctx, run, 1, events.RunFinished{Run: run, Status: "ok", OutputSession: s.ID()}); err != nil {
		failed++
		fmt.Fprintln(os.Stderr, "run.finished:", err)
	}
	fmt.Printf("appended %s %d failed %d\n", s.ID(), mpAppends, failed)
	if failed > 0 {
		return 3
	}
	return 0
}

// TestMultiProcess_AppendRebuildVerify runs four processes appending to
// one store while a fifth runs "rath rebuild" and a sixth "rath verify"
// and "rath rebuild --check", each in a loop: no append may fail, no check
// may raise an alarm, and at the end the projections equal a rebuild from
// the log.
func TestMultiProcess_AppendRebuildVerify(t *testing.T) {
	dir := t.TempDir()
	// Create the store first, so no two processes race to migrate it.
	rt, err := rath.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	type proc struct {
		role     string
		cmd      *execpkg.Cmd
		out, err bytes.Buffer
	}
	start := func(role string) *proc {
		p := &proc{role: role}
		p.cmd = execpkg.CommandContext(ctx, os.Args[0], "-test.run=^$")
		p.cmd.Env = append(os.Environ(), roleEnv+"="+role)
		p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.err
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	began := time.Now()
	background := []*proc{start("rebuild " + dir), start("verify " + dir)}
	var writers []*proc
	for i := range mpWriters {
		writers = append(writers, start(fmt.Sprintf("append %s %d", dir, i)))
	}
	var problems []string
	wait := func(p *proc) {
		if err := p.cmd.Wait(); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v\n%s%s", p.role, err, p.out.String(), p.err.String()))
		}
	}
	for _, p := range writers {
		wait(p)
	}
	if err := os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range background {
		wait(p)
	}
	for _, p := range append(writers, background...) {
		t.Logf("%s: %s", p.role, strings.TrimSpace(p.out.String()))
	}
	if len(problems) > 0 {
		t.Fatalf("%d of %d processes failed:\n%s", len(problems), len(writers)+len(background), strings.Join(problems, "\n"))
	}
	for _, p := range background {
		if f := strings.Fields(p.out.String()); len(f) < 3 || f[2] == "0" {
			t.Fatalf("%s ran no iteration: %q", p.role, p.out.String())
		}
	}
	t.Logf("6 processes took %v", time.Since(began).Round(time.Millisecond))

	// Every append is in the log and in the projections.
	out := mustRun(t, dir, "rebuild", "--check")
	if !strings.Contains(out, "projections equal") {
		t.Fatalf("rebuild --check:\n%s", out)
	}
	mustRun(t, dir, "verify")
	rt, err = rath.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for _, p := range writers {
		f := strings.Fields(p.out.String())
		s, err := rt.Session(t.Context(), f[1])
		if err != nil {
			t.Fatal(err)
		}
		if want := 1 + mpAppends - mpAppends/10; s.Len() != want || s.Usage().Calls != mpAppends/10 {
			t.Fatalf("%s: %d chunks and %d calls, want %d and %d", p.role, s.Len(), s.Usage().Calls, want, mpAppends/10)
		}
	}
	runs, err := rt.Reader().Runs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != mpWriters {
		t.Fatalf("%d runs, want %d", len(runs), mpWriters)
	}
	for _, r := range runs {
		if r.Status != "ok" {
			t.Fatalf("run %s status %q", r.ID, r.Status)
		}
	}
	head, _ := rt.Store().Head(t.Context())
	// Per writer: run.started, session.created, the appends, run.finished.
	if want := int64(mpWriters * (3 + mpAppends)); head.Seq != want {
		t.Fatalf("log has %d events, want %d", head.Seq, want)
	}
}
