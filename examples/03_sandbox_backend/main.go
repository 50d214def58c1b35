// Command 03_sandbox_backend runs the same tool call on two sandbox
// backends: "local" (host processes confined to a workspace directory) and
// "bwrap" (the same workspace inside bubblewrap: read-only system, no
// network, its own pid namespace, the workspace at /workspace).
//
// Sessions are placed on a sandbox like tensors on a device:
// s.To(ctx, "bwrap", dir). The agent and its tools do not change; the
// placement decides where run_shell_command runs, and the tool evidence
// records which backend ran it. Each run is then replayed.
//
// It needs bubblewrap (Debian package bubblewrap) and says so if missing:
//
//	go run ./examples/03_sandbox_backend
//
// The model turns come from cassette.json, written by hand; with -live a
// real model (OPENAI_API_KEY, ANTHROPIC_API_KEY or ~/.rath/config.json)
// decides which commands to run instead.
package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/builtin"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/replay"
	"github.com/gorath/rath/sandbox"
)

//go:embed cassette.json
var cassette []byte

func main() {
	dir := flag.String("dir", "", "runtime directory to keep (default: a temporary one, removed at exit)")
	live := flag.Bool("live", false, "call a real model instead of the cassette")
	flag.Parse()
	ctx := context.Background()

	rt, cleanup := openRuntime(ctx, *dir)
	defer cleanup()

	// Fail early, and clearly, when bubblewrap cannot run here.
	bwrapDir := workspace(rt, "work-bwrap")
	if _, err := rt.Sandboxes().Get(ctx, events.Placement{Backend: "bwrap", Spec: bwrapDir}); err != nil {
		if errors.Is(err, sandbox.ErrUnavailable) {
			fmt.Fprintln(os.Stderr, "bubblewrap is not available, so this example cannot run:")
			fmt.Fprintln(os.Stderr, " ", err)
			fmt.Fprintln(os.Stderr, "install it (apt-get install bubblewrap) and run the example again.")
			cleanup()
			os.Exit(1)
		}
		check(err)
	}

	tools, err := builtin.New(rt.Sandboxes(), builtin.RunShellCommand)
	check(err)

	for _, backend := range []string{"local", "bwrap"} {
		workspace := workspace(rt, "work-"+backend)
		// Each backend gets a fresh cassette: the same scripted turns.
		p, err := provider(cassette, *live)
		check(err)
		agent, err := flow.NewAgent("You are a shell assistant. Use run_shell_command.", p, flow.WithTools(tools...))
		check(err)

		task, err := rt.NewUserSession(ctx, "Where do your commands run? Check, and leave a note.")
		check(err)
		task, err = task.To(ctx, backend, workspace) // the only line that differs
		check(err)
		run, err := rt.Start(ctx, "where-"+backend, agent, task, rath.WithSeed("sandbox-"+backend))
		check(err)

		fmt.Printf("== %s (session %s)\n", backend, run.Output.ID())
		for _, c := range run.Output.Chunks() {
			if c.Role == events.RoleToolResult {
				// The local workdir is a host path; show it as a name.
				out := strings.ReplaceAll(c.Content, workspace, "<workspace>")
				fmt.Println(indent(out))
			}
		}
		ret, err := toolEvidence(ctx, rt, run.Output.ID())
		check(err)
		exit := "none"
		if ret.ExitCode != nil {
			exit = fmt.Sprint(*ret.ExitCode)
		}
		fmt.Printf("evidence: %s ran on backend %q, exit code %s, files %s\n", ret.Tool, ret.Backend, exit, files(ret.Files))
		// Either way, the file lands in the workspace directory on the host.
		if note, err := os.ReadFile(filepath.Join(workspace, "note.txt")); err == nil {
			fmt.Printf("the host reads %s/note.txt: %s", filepath.Base(workspace), note)
		}

		rep, err := replay.Run(ctx, rt, run.ID, agent)
		check(err)
		verdict("replay", rep)
	}
}

// toolEvidence returns the tool.returned event recorded on a session.
func toolEvidence(ctx context.Context, rt *rath.Runtime, id string) (*events.ToolReturned, error) {
	evs, err := rt.Store().Read(ctx, eventlog.Query{Stream: id, Types: []string{events.TypeToolReturned}})
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 {
		return nil, fmt.Errorf("no tool.returned on %s", id)
	}
	p, err := evs[0].Decode()
	if err != nil {
		return nil, err
	}
	return p.(*events.ToolReturned), nil
}

func files(fs []events.FileChange) string {
	var names []string
	for _, f := range fs {
		state := "modified"
		switch {
		case f.Before == "":
			state = "created"
		case f.After == "":
			state = "deleted"
		}
		names = append(names, f.Path+" ("+state+")")
	}
	return "[" + strings.Join(names, ", ") + "]"
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
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

// openRuntime opens the runtime in dir, or in a temporary directory
// removed by the returned func when dir is empty.
func openRuntime(ctx context.Context, dir string) (*rath.Runtime, func()) {
	remove := func() {}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "rath-example-")
		check(err)
		dir, remove = filepath.Join(tmp, "store"), func() { os.RemoveAll(tmp) }
	}
	rt, err := rath.Open(ctx, dir)
	check(err)
	return rt, func() {
		check(rt.Close())
		remove()
	}
}

// workspace is a directory beside the runtime's (never inside it: a
// workspace that holds the store is refused).
func workspace(rt *rath.Runtime, name string) string {
	return filepath.Clean(rt.Dir()) + "-" + name
}

// verdict prints the replay's verdict and exits 1 if it diverged.
func verdict(label string, rep *replay.Report) {
	if !rep.OK() {
		fmt.Printf("%s: %d of %d events reproduced, then diverged:\n%v\n", label, rep.Matched, rep.Recorded, rep.Divergence)
		os.Exit(1)
	}
	fmt.Printf("%s: %d of %d events reproduced (100%%)\n", label, rep.Matched, rep.Recorded)
}

// check stops the program on an error, as an example's main may.
func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
