package rath_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
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

	rep, _ := rt.Verify(ctx, events.VerifyOptions{})
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
