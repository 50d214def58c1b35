// Command 06_mcp_tool gives an agent the tools of an MCP server with
// package flow/mcptool: a Manager starts the server over stdio, keeps one
// connection to it, and wraps each of its tools as a flow.Tool named
// "<server>__<tool>" whose arguments are checked against the server's
// schema. Every result records the server as its evidence.
//
// The server is the MCP reference server ("everything", from npm). It needs
// node and the npm fixture of this repository:
//
//	(cd flow/mcptool/testdata/server-everything && npm ci --no-audit --no-fund)
//	go run ./examples/06_mcp_tool
//
// Another server command can be given with -server or RATH_MCP_SERVER, as
// a command line ("node /path/to/dist/index.js stdio"). The model turns
// come from cassette.json, written by hand; the tool results come from the
// real server. The replay at the end runs after the server is stopped: the
// tool results are answered from the record.
package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/mcptool"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/replay"
)

//go:embed cassette.json
var cassette []byte

// fixture is where `npm ci` installs the reference server, relative to the
// repository root.
const fixture = "flow/mcptool/testdata/server-everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

func main() {
	dir := flag.String("dir", "", "runtime directory to keep (default: a temporary one, removed at exit)")
	server := flag.String("server", os.Getenv("RATH_MCP_SERVER"), "MCP server command line (default: node and the repository's npm fixture)")
	flag.Parse()
	ctx := context.Background()

	cmdline, err := serverCommand(*server)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cannot start the MCP server:", err)
		os.Exit(1)
	}

	rt, cleanup := openRuntime(ctx, *dir)
	defer cleanup()

	m := mcptool.NewManager()
	defer m.Close()
	check(m.ConnectServer(ctx, "everything", mcptool.Server{Command: cmdline[0], Args: cmdline[1:]}))
	info, err := m.Server("everything")
	check(err)
	all, err := m.Tools(ctx, "everything")
	check(err)
	fmt.Printf("connected to %s %s over stdio: %d tools\n", info.ServerInfo.Name, info.ServerInfo.Version, len(all))

	// Give the agent only the tools it needs.
	var tools []flow.Tool
	for _, t := range all {
		if slices.Contains([]string{"everything__get-sum", "everything__echo"}, t.Name()) {
			tools = append(tools, t)
		}
	}
	script, err := scripted.Parse(cassette)
	check(err)
	p, err := rath.NewProvider(flow.Provider{Vendor: flow.VendorScripted, Client: script, Model: "scripted"})
	check(err)
	agent, err := flow.NewAgent("You use the MCP tools you are given.", p, flow.WithTools(tools...))
	check(err)

	task, err := rt.NewUserSession(ctx, "Ask the MCP server for the sum of 2 and 40, then have it echo the result.")
	check(err)
	run, err := rt.Start(ctx, "mcp", agent, task, rath.WithSeed("mcp-tool"))
	check(err)

	for _, c := range run.Output.Chunks() {
		for _, tc := range c.ToolCalls {
			fmt.Printf("call %s %s\n", tc.Name, tc.Arguments)
		}
		switch {
		case c.Role == events.RoleToolResult:
			fmt.Println("  ", c.Content)
		case c.Role == events.RoleAssistant && c.Content != "":
			fmt.Println("answer:", c.Content)
		}
	}
	evs, err := rt.Store().Read(ctx, eventlog.Query{Stream: run.Output.ID(), Types: []string{events.TypeToolReturned}})
	check(err)
	for _, ev := range evs {
		payload, err := ev.Decode()
		check(err)
		r := payload.(*events.ToolReturned)
		fmt.Printf("evidence: %s ran on backend %q, sandbox %q\n", r.Tool, r.Backend, r.SandboxID)
	}

	check(m.Close()) // the replay needs no server
	rep, err := replay.Run(ctx, rt, run.ID, agent)
	check(err)
	if !rep.OK() {
		fmt.Printf("replay (server stopped): %d of %d events reproduced, then diverged:\n%v\n", rep.Matched, rep.Recorded, rep.Divergence)
		os.Exit(1)
	}
	fmt.Printf("replay (server stopped): %d of %d events reproduced (100%%)\n", rep.Matched, rep.Recorded)
}

// serverCommand returns the server's command line: the one given, or node
// with the npm fixture found in the current directory or above it.
func serverCommand(given string) ([]string, error) {
	var cmdline []string
	if given != "" {
		cmdline = strings.Fields(given)
	} else {
		entry, err := findFixture()
		if err != nil {
			return nil, err
		}
		cmdline = []string{"node", entry, "stdio"}
	}
	if _, err := exec.LookPath(cmdline[0]); err != nil {
		return nil, fmt.Errorf("%s is not installed (%w)", cmdline[0], err)
	}
	return cmdline, nil
}

// findFixture looks for the installed reference server from the current
// directory up to the filesystem root.
func findFixture() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		path := filepath.Join(dir, fixture)
		if _, err := os.Stat(path); err == nil {
			return path, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("the MCP reference server is not installed; run this from the repository after:\n" +
				"\t(cd flow/mcptool/testdata/server-everything && npm ci --no-audit --no-fund)\n" +
				"or pass its command line with -server or RATH_MCP_SERVER")
		}
		dir = parent
	}
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

// check stops the program on an error, as an example's main may.
func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
