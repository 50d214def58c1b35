// Command 12_replay shows what the event log proves about a run.
//
//  1. Record: a drafter and an editor (a flow.Sequential) write a product
//     blurb in a run started with rt.Start.
//  2. Replay: replay.Run re-executes the same code against the record (no
//     model call) and compares every event it writes: 100% reproduced.
//  3. Divergence: the same workflow with the editor's prompt changed is
//     replayed; the report names the first divergent event (its seq), a
//     hint (prompt changed) and a diff of the request.
//  4. What-if: replay.ForkAt replays the run up to just before that event
//     and goes on live with the changed prompt, as a new run linked to the
//     original.
//  5. Tampering: in a copy of the database, an event's payload is edited
//     behind rath's back (the trigger that forbids it dropped first, with
//     database/sql and the "sqlite" driver); rt.Verify recomputes the hash
//     chain and names the seq.
//
// Run it offline; the model turns come from cassette.json, written by hand:
//
//	go run ./examples/12_replay
package main

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver rath uses, registered as "sqlite"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/replay"
)

//go:embed cassette.json
var cassette []byte

const editorPrompt = "You edit product copy: cut every word that does not earn its place."

// newWorkflow builds the drafter-then-editor workflow with the given
// editor prompt.
func newWorkflow(p *flow.Provider, editor string) (flow.Workflow, error) {
	draft, err := flow.NewAgent("You draft product descriptions.", p, flow.WithName("draft"))
	if err != nil {
		return nil, err
	}
	edit, err := flow.NewAgent(editor, p, flow.WithName("edit"))
	if err != nil {
		return nil, err
	}
	return flow.NewSequential(draft, edit), nil
}

func main() {
	dir := flag.String("dir", "", "runtime directory to keep (default: a temporary one, removed at exit)")
	flag.Parse()
	ctx := context.Background()

	base := *dir
	if base == "" {
		tmp, err := os.MkdirTemp("", "rath-example-")
		check(err)
		defer os.RemoveAll(tmp)
		base = tmp
	}
	origDir := filepath.Join(base, "original")
	rt, err := rath.Open(ctx, origDir)
	check(err)

	p, err := provider(cassette, false) // always the cassette: this example has no -live
	check(err)
	wf, err := newWorkflow(p, editorPrompt)
	check(err)

	// 1. Record.
	input, err := rt.NewUserSession(ctx, "Describe our new desk lamp: bright, three levels, USB charging port.")
	check(err)
	run, err := rt.Start(ctx, "blurb", wf, input, rath.WithSeed("replay-example"))
	check(err)
	last, _ := run.Output.Last()
	fmt.Println("1. recorded run, final blurb:", last.Content)

	// 2. Replay the same code.
	rep, err := replay.Run(ctx, rt, run.ID, wf)
	check(err)
	if !rep.OK() {
		log.Fatalf("the unchanged workflow diverged: %v", rep)
	}
	fmt.Printf("2. replay: %d of %d events reproduced (100%%)\n", rep.Matched, rep.Recorded)

	// 3. Replay a copy of the workflow whose editor prompt changed.
	changed, err := newWorkflow(p, "You edit product copy for a playful tone.")
	check(err)
	rep, err = replay.Run(ctx, rt, run.ID, changed)
	check(err)
	d := rep.Divergence
	if d == nil {
		log.Fatal("the changed workflow reproduced the run")
	}
	fmt.Printf("3. replay with a changed prompt: %d of %d events reproduced; first divergence:\n", rep.Matched, rep.Recorded)
	fmt.Printf("   %s at seq %d (%s)\n   hint: %s\n   diff:\n%s\n", d.Class, d.Seq, d.Type, d.Hint, indent(d.Diff, "     "))

	// 4. What if: replay up to just before the divergent call, then go on
	// live with the changed prompt, as a new run.
	fork, err := replay.ForkAt(ctx, rt, run.ID, d.Seq-1, changed)
	check(err)
	last, _ = fork.Output.Last()
	row, err := rt.Reader().Run(ctx, fork.ID)
	check(err)
	fmt.Printf("4. fork at seq %d: new run (parent %s), final blurb: %s\n", d.Seq-1, parentName(row.ParentRun, run.ID), last.Content)
	// The fork is a run like any other: it replays with its own code.
	rep, err = replay.Run(ctx, rt, fork.ID, changed)
	check(err)
	if !rep.OK() {
		log.Fatalf("the fork diverged: %v", rep)
	}
	fmt.Printf("   replay of the fork: %d of %d events reproduced (100%%)\n", rep.Matched, rep.Recorded)

	// 5. Tamper with a copy of the database and verify both.
	edited, err := editorChunkSeq(ctx, rt, run.ID)
	check(err)
	check(rt.Close())
	copyDir := filepath.Join(base, "tampered")
	check(copyDB(origDir, copyDir))
	check(tamper(filepath.Join(copyDir, rath.DBFile), edited))
	fmt.Printf("5. tampered copy: edited the payload of seq %d (the editor's chunk) with database/sql\n", edited)
	for _, d := range []string{origDir, copyDir} {
		fmt.Printf("   %-9s %s\n", filepath.Base(d)+":", verify(ctx, d))
	}
}

// parentName says whether the fork's parent is the original run.
func parentName(parent, original string) string {
	if parent == original {
		return "the original run"
	}
	return parent
}

// editorChunkSeq finds the chunk.appended event of the editor's answer.
func editorChunkSeq(ctx context.Context, rt *rath.Runtime, runID string) (int64, error) {
	evs, err := rt.Store().Read(ctx, eventlog.Query{RunID: runID, Types: []string{events.TypeChunkAppended}})
	if err != nil {
		return 0, err
	}
	for _, ev := range evs {
		p, err := ev.Decode()
		if err != nil {
			return 0, err
		}
		if c := p.(*events.ChunkAppended).Chunk; c.Author == "root.edit" {
			return ev.Seq, nil
		}
	}
	return 0, fmt.Errorf("run %s has no chunk by root.edit", runID)
}

// copyDB copies the database files of a closed runtime.
func copyDB(from, to string) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	for _, name := range []string{rath.DBFile, rath.DBFile + "-wal"} {
		data, err := os.ReadFile(filepath.Join(from, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // no write-ahead log left after a clean close
		}
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// tamper edits one event's payload the way an attacker with file access
// could: drop the trigger that refuses updates, then update.
func tamper(path string, seq int64) error {
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Exec(`DROP TRIGGER events_no_update`); err != nil {
		return err
	}
	res, err := db.Exec(`UPDATE events SET payload = replace(payload, 'USB port', 'solar panel') WHERE seq = ? AND payload LIKE '%USB port%'`, seq)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("tamper with seq %d: %d rows changed (%v)", seq, n, err)
	}
	return nil
}

// verify opens the runtime in dir and checks its hash chain.
func verify(ctx context.Context, dir string) string {
	rt, err := rath.Open(ctx, dir)
	check(err)
	defer rt.Close()
	rep, err := rt.Verify(ctx, eventlog.VerifyOptions{})
	check(err)
	if !rep.OK() {
		return fmt.Sprintf("verify FAILED at seq %d: %s", rep.Failure.Seq, rep.Failure.Reason)
	}
	return fmt.Sprintf("verify ok, %d events", rep.Events)
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}

// provider answers from the embedded cassette, or with -live from a real
// model (OPENAI_API_KEY, ANTHROPIC_API_KEY or ~/.rath/config.json).
func provider(cassette []byte, live bool) (*flow.Provider, error) {
	if live {
		return rath.NewProvider(flow.Provider{})
	}
	c, err := scripted.Parse(cassette)
	if err != nil {
		return nil, fmt.Errorf("parse cassette: %w", err)
	}
	return rath.NewProvider(flow.Provider{Vendor: flow.VendorScripted, Client: c, Model: "scripted"})
}

// check stops the program on an error, as an example's main may.
func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
