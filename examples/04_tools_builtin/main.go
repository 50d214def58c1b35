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

	rt, rtDir, cleanup := openRuntime(ctx, *dir)
	defer cleanup()

	// The tools act on the sandbox of the calling session's placement,
	// taken from the runtime's pool of open sandboxes.
	tools, err := builtin.New(rt.Sandboxes(),
		builtin.WriteWorkspaceFile, builtin.RunShellCommand, builtin.RunCode,
		builtin.ListWorkspaceFiles, builtin.ReadWorkspaceFile)
	check(err)
	p, err := newProvider(*live)
	check(err)
	agent, err := flow.NewAgent("You work with files in your workspace. Use the tools; be brief.", p, flow.WithTools(tools...))
	check(err)

	task, err := rt.NewUserSession(ctx, "Save the numbers 42, 7 and 19, sort them, add them up, and tell me.")
	check(err)
	task, err = task.To(ctx, "local", filepath.Join(rtDir, "work"))
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
	evs, err := rt.Store().Read(ctx, events.Query{Stream: run.Output.ID(), Types: []string{events.TypeToolReturned}})
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
	printVerdict("replay", rep)
	rep, err = replay.Run(ctx, rt, run.ID, agent, replay.WithLiveTools())
	check(err)
	printVerdict("replay with live tools", rep)
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

func newProvider(live bool) (*flow.Provider, error) {
	if live {
		return flow.NewProvider(flow.Provider{})
	}
	c, err := scripted.Parse(cassette)
	if err != nil {
		return nil, err
	}
	return flow.NewProvider(flow.Provider{Kind: flow.KindScripted, Client: c, Model: "scripted"})
}

// openRuntime opens the runtime in dir, or in a temporary directory that
// the returned cleanup removes.
func openRuntime(ctx context.Context, dir string) (*rath.Runtime, string, func()) {
	remove := func() {}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "rath-example-")
		check(err)
		dir, remove = tmp, func() { os.RemoveAll(tmp) }
	}
	rt, err := rath.Open(ctx, dir)
	check(err)
	return rt, dir, func() {
		check(rt.Close())
		remove()
	}
}

func printVerdict(what string, rep *replay.Report) {
	if !rep.OK() {
		fmt.Printf("%s: %d of %d events reproduced, then diverged:\n%v\n", what, rep.Matched, rep.Recorded, rep.Divergence)
		os.Exit(1)
	}
	fmt.Printf("%s: %d of %d events reproduced (100%%)\n", what, rep.Matched, rep.Recorded)
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
