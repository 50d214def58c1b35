package exkit

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/gorath/rath"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/replay"
)

// Provider returns the provider that answers from cassette, a scripted
// cassette (usually the example's embedded cassette.json), or with live a
// real one resolved from the environment and ~/.rath/config.json.
func Provider(cassette []byte, live bool) (*flow.Provider, error) {
	if live {
		return rath.NewProvider(flow.Provider{})
	}
	c, err := scripted.Parse(cassette)
	if err != nil {
		return nil, fmt.Errorf("parse cassette: %w", err)
	}
	return rath.NewProvider(flow.Provider{Vendor: flow.VendorScripted, Client: c, Model: "scripted"})
}

// Open opens the runtime in dir, or when dir is empty in a temporary
// directory, and returns a cleanup that closes the runtime and removes
// that temporary directory; a given dir is kept for the rath CLI to read.
// rt.Dir() is the directory used. Open exits the process on failure.
func Open(ctx context.Context, dir string) (*rath.Runtime, func()) {
	remove := func() {}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "rath-example-")
		Check(err)
		// The store in a subdirectory, so that workspaces beside it
		// (Workspace) are removed with it.
		dir, remove = filepath.Join(tmp, "store"), func() { os.RemoveAll(tmp) }
	}
	rt, err := rath.Open(ctx, dir)
	Check(err)
	return rt, func() {
		Check(rt.Close())
		remove()
	}
}

// Workspace returns the workspace directory name for rt: beside the store
// directory (DIR-name), never inside it, since the runtime refuses a
// sandbox that could write its own log.
func Workspace(rt *rath.Runtime, name string) string {
	return filepath.Clean(rt.Dir()) + "-" + name
}

// Verdict prints the replay report after label, "N of N events reproduced
// (100%)" when every recorded event was reproduced; otherwise it prints the
// divergence and exits with status 1, since an example whose replay
// diverges has failed.
func Verdict(label string, rep *replay.Report) {
	if !rep.OK() {
		fmt.Printf("%s: %d of %d events reproduced, then diverged:\n%v\n", label, rep.Matched, rep.Recorded, rep.Divergence)
		os.Exit(1)
	}
	fmt.Printf("%s: %d of %d events reproduced (100%%)\n", label, rep.Matched, rep.Recorded)
}

// Check stops the example with err, if any: the examples have no caller to
// return an error to.
func Check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
