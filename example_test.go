package rath_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/sandbox"
)

func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rath-example")
	defer os.RemoveAll(dir)

	rt, err := rath.Open(ctx, dir) // creates dir/rath.db and applies the schema
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	s, _ := rt.NewUserSession(ctx, "hello")
	s, _ = s.Append(ctx, events.Chunk{Role: events.RoleAssistant, Content: "hi, how can I help?"})
	s, _ = s.To(ctx, "local", "./work")

	rep, _ := rt.Verify(ctx, eventlog.VerifyOptions{})
	fmt.Println("chunks:", s.Len(), "version:", s.Version(), "placed on:", s.Placement().Backend)
	fmt.Println("events verified:", rep.Events, "ok:", rep.OK())
	// Output:
	// chunks: 2 version: 3 placed on: local
	// events verified: 3 ok: true
}

// A runtime that must not run tools unconfined on its host: its sessions
// can be placed on bwrap alone.
func ExampleBuiltinSandboxes() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rath-example")
	defer os.RemoveAll(dir)

	reg, err := rath.BuiltinSandboxes("bwrap")
	if err != nil {
		log.Fatal(err)
	}
	rt, err := rath.OpenWith(ctx, rath.Options{Dir: dir, Sandboxes: reg})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	s, _ := rt.NewUserSession(ctx, "hello")
	_, err = s.To(ctx, "local", "./work")
	fmt.Println(reg.Names(), err != nil)
	// Output:
	// [bwrap] true
}

// Workspaces confined to one directory tree: a workspace under it opens,
// one elsewhere does not.
func ExampleBuiltinSandboxesWith() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rath-example")
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "workspaces")
	os.MkdirAll(root, 0o755)

	reg, err := rath.BuiltinSandboxesWith(rath.SandboxOptions{WorkspaceRoot: root}, "local")
	if err != nil {
		log.Fatal(err)
	}
	local, _ := reg.Lookup("local")
	sb, err := local.Open(ctx, filepath.Join(root, "run-1"))
	fmt.Println(err)
	sb.Close()
	_, err = local.Open(ctx, filepath.Join(dir, "elsewhere"))
	fmt.Println(errors.Is(err, sandbox.ErrInvalidSpec))
	// Output:
	// <nil>
	// true
}
