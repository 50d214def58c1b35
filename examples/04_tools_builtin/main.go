// Command 04_tools_builtin gives an agent rath's built-in sandbox tools
// (builtin.New) and shows what the model sees and what the log keeps: each
// call's result, and evidence such as the files a call created with their
// hashes before and after.
//
// The agent writes a file, sorts it with run_shell_command, sums it with
// run_code (Python), lists the workspace and tries to read a file outside
// it, which is refused. The run is replayed twice: strictly from the record,
// then with replay.WithLiveTools, which runs the tools again in a fresh
// copy of the workspace and compares their outputs.
//
// Run it offline; the model turns come from cassette.json, written by hand:
//
//	go run ./examples/04_tools_builtin
//
// With -live a real model (OPENAI_API_KEY, ANTHROPIC_API_KEY or
// ~/.rath/config.json) drives the tools instead; -dir DIR keeps the
// database and the workspace (DIR/work).
package main

import (
	"context"
	_ "embed"
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

	// The tools act on the sandbox of the calling session's placement,
	// taken from the runtime's pool of open sandboxes.
	tools, err := builtin.New(rt.Sandboxes(),
		builtin.WriteWorkspaceFile, builtin.RunShellCommand, builtin.RunCode,
		builtin.ListWorkspaceFiles, builtin.ReadWorkspaceFile)
	check(err)
	p, err := provider(cassette, *live)
	check(err)
	agent, err := flow.NewAgent("You work with files in your workspace. Use the tools; be brief.", p, flow.WithTools(tools...))
	check(err)

	task, err := rt.NewUserSession(ctx, "Save the numbers 42, 7 and 19, sort them, add them up, and tell me.")
	check(err)
	task, err = task.To(ctx, "local", workspace(rt, "work"))
	check(err)
	run, err := rt.Start(ctx, "numbers", agent, task, rath.WithSeed("tools-builtin"))
	check(err)

	for _, c := range run.Output.Chunks() {
		switch c.Role {
		case events.RoleAssistant:
			for _, tc := range c.ToolCalls {
				fmt.Printf("call %s %s\n", tc.Name, tc.Arguments)
			}
			if c.Content != "" {
				fmt.Println("answer:", c.Content)
			}
		case events.RoleToolResult:
			fmt.Println(indent(c.Content))
		}
	}

	// The evidence: every tool.returned event names the backend and the
	// files the call changed, with content hashes (contents are blobs).
	evs, err := rt.Store().Read(ctx, eventlog.Query{Stream: run.Output.ID(), Types: []string{events.TypeToolReturned}})
	check(err)
	fmt.Println("evidence:")
	for _, ev := range evs {
		payload, err := ev.Decode()
		check(err)
		r := payload.(*events.ToolReturned)
		line := fmt.Sprintf("  %-20s on %s", r.Tool, r.Backend)
		if r.ErrorKind != "" {
			line += ", error kind " + r.ErrorKind
		}
		for _, f := range r.Files {
			line += fmt.Sprintf(", %s %s", f.Path, change(f))
		}
		fmt.Println(line)
	}

	rep, err := replay.Run(ctx, rt, run.ID, agent)
	check(err)
	verdict("replay", rep)
	rep, err = replay.Run(ctx, rt, run.ID, agent, replay.WithLiveTools())
	check(err)
	verdict("replay with live tools", rep)
}

func change(f events.FileChange) string {
	switch {
	case f.Before == "":
		return "created"
	case f.After == "":
		return "deleted"
	}
	return "modified"
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
