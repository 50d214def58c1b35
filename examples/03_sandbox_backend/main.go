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
	"os"
	"path/filepath"
	"strings"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/examples/internal/exkit"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/builtin"
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

	rt, cleanup := exkit.Open(ctx, *dir)
	defer cleanup()

	// Fail early, and clearly, when bubblewrap cannot run here.
	bwrapDir := exkit.Workspace(rt, "work-bwrap")
	if _, err := rt.Sandboxes().Get(ctx, events.Placement{Backend: "bwrap", Spec: bwrapDir}); err != nil {
		if errors.Is(err, sandbox.ErrUnavailable) {
			fmt.Fprintln(os.Stderr, "bubblewrap is not available, so this example cannot run:")
			fmt.Fprintln(os.Stderr, " ", err)
			fmt.Fprintln(os.Stderr, "install it (apt-get install bubblewrap) and run the example again.")
			cleanup()
			os.Exit(1)
		}
		exkit.Check(err)
	}

	tools, err := builtin.New(rt.Sandboxes(), builtin.RunShellCommand)
	exkit.Check(err)

	for _, backend := range []string{"local", "bwrap"} {
		workspace := exkit.Workspace(rt, "work-"+backend)
		// Each backend gets a fresh cassette: the same scripted turns.
		p, err := exkit.Provider(cassette, *live)
		exkit.Check(err)
		agent, err := flow.NewAgent("You are a shell assistant. Use run_shell_command.", p, flow.WithTools(tools...))
		exkit.Check(err)

		task, err := rt.NewUserSession(ctx, "Where do your commands run? Check, and leave a note.")
		exkit.Check(err)
		task, err = task.To(ctx, backend, workspace) // the only line that differs
		exkit.Check(err)
		run, err := rt.Start(ctx, "where-"+backend, agent, task, rath.WithSeed("sandbox-"+backend))
		exkit.Check(err)

		fmt.Printf("== %s (session %s)\n", backend, run.Output.ID())
		for _, c := range run.Output.Chunks() {
			if c.Role == events.RoleToolResult {
				// The local workdir is a host path; show it as a name.
				out := strings.ReplaceAll(c.Content, workspace, "<workspace>")
				fmt.Println(indent(out))
			}
		}
		ret, err := toolEvidence(ctx, rt, run.Output.ID())
		exkit.Check(err)
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
		exkit.Check(err)
		exkit.Verdict("replay", rep)
	}
}

// toolEvidence returns the tool.returned event recorded on a session.
func toolEvidence(ctx context.Context, rt *rath.Runtime, id string) (*events.ToolReturned, error) {
	evs, err := rt.Store().Read(ctx, events.Query{Stream: id, Types: []string{events.TypeToolReturned}})
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
