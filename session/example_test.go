package session_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
)

func ExampleSession_Fork() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rath-example")
	defer os.RemoveAll(dir)
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	task, _ := rt.NewUserSession(ctx, "Write a haiku about logs.")
	a, _ := task.Fork(ctx)
	b, _ := task.Fork(ctx)
	a, _ = a.Append(ctx, events.Chunk{Role: "assistant", Content: "append-only lines"})
	b, _ = b.Append(ctx, events.Chunk{Role: "assistant", Content: "hashes chained in order"})
	both, _ := a.Merge(ctx, b)

	for _, c := range both.Chunks() {
		fmt.Printf("%s: %s\n", c.Role, c.Content)
	}
	fmt.Println("parents:", len(both.Parents()))
	// Output:
	// user: Write a haiku about logs.
	// assistant: append-only lines
	// assistant: hashes chained in order
	// parents: 2
}

func ExampleSession_Transcript() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rath-example")
	defer os.RemoveAll(dir)
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	s, _ := rt.NewUserSession(ctx, "What is in the workspace?")
	s, _ = s.Append(ctx,
		events.Chunk{Role: "assistant", Author: "root", ToolCalls: []events.ToolCall{{ID: "c1", Name: "list_workspace_files", Arguments: `{"path":"."}`}}},
		events.Chunk{Role: "tool_result", Name: "list_workspace_files", ToolCallID: "c1", Content: "README.md\nmain.go"},
		events.Chunk{Role: "assistant", Author: "root", Content: "A README and main.go.\u202e"})
	fmt.Print(strings.Replace(s.Transcript(), s.ID(), "s-…", 1))
	// Output:
	// session s-…: 4 chunks, 0 tokens in 0 model calls
	//
	// #0 user
	//   What is in the workspace?
	//
	// #1 assistant by root
	//   → list_workspace_files {"path":"."}
	//
	// #2 tool_result list_workspace_files for call c1
	//   README.md
	//   main.go
	//
	// #3 assistant by root
	//   A README and main.go.\u202e
}
