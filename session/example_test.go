package session_test

import (
	"context"
	"fmt"
	"log"
	"os"

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
