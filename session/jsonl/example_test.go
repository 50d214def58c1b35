package jsonl_test

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"
	"os"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session/jsonl"
)

func ExampleImport() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rath-example")
	defer os.RemoveAll(dir)
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	// A session written by the Python OpenRath, and one whose writer crashed.
	rep, err := jsonl.Import(ctx, rt.Sessions(), "testdata/openrath_basic.jsonl", "testdata/openrath_crashed.jsonl")
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range rep.Files {
		fmt.Printf("%s: %d chunks, incomplete=%v\n", f.Session, f.Chunks, f.Incomplete)
	}
	s, _ := rt.Session(ctx, "or-basic")
	last, _ := s.Last()
	fmt.Printf("last %s chunk: %s\n", last.Role, last.Content)
	// Output:
	// or-basic: 5 chunks, incomplete=false
	// or-crashed: 2 chunks, incomplete=true
	// last assistant chunk: There are two files.
}

func ExampleExport() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rath-example")
	defer os.RemoveAll(dir)
	// Ids made outside a run derive from the runtime's random seed; a fixed
	// entropy source keeps this example's output the same on every run.
	rt, err := rath.OpenWith(ctx, rath.Options{Dir: dir, Entropy: rand.NewChaCha8([32]byte{})})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	s, _ := rt.NewUserSession(ctx, "Name a prime.")
	s, _ = s.Append(ctx, events.Chunk{Role: events.RoleAssistant, Content: "7", Author: "root.math"})
	if err := jsonl.Export(ctx, rt.Sessions(), s.ID(), os.Stdout); err != nil {
		log.Fatal(err)
	}
	// Output:
	// {"record_type":"header","id":"s-a547661cef279b7c86e7","parent_session_ids":[],"lineage_kind":"root","sandbox_backend":"","sandbox_spec":"","format":"rath-export","version":1,"origin":"user","session_version":2}
	// {"record_type":"chunk","index":0,"kind":"user","payload":{"content":"Name a prime."}}
	// {"record_type":"chunk","index":1,"kind":"assistant","payload":{"content":"7","rath":{"author":"root.math"}}}
	// {"record_type":"trailer","final_chunk_count":2,"cumulative_usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}
}
