package memory_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/memory"
)

// openExample opens a runtime and its local memory in a scratch directory.
func openExample() (*rath.Runtime, *memory.Local, func()) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "rath-memory-example")
	if err != nil {
		log.Fatal(err)
	}
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	mem, err := memory.OpenLocal(ctx, rt.Store(), filepath.Join(dir, "example-memory.bleve"),
		memory.LocalOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		log.Fatal(err)
	}
	return rt, mem, func() {
		mem.Close()
		rt.Close()
		os.RemoveAll(dir)
	}
}

func ExampleOpenLocal() {
	ctx := context.Background()
	_, mem, done := openExample()
	defer done()

	ns := memory.UserNamespace("ann")
	mem.Remember(ctx, ns, "Ann prefers short answers.", nil)
	mem.Remember(ctx, ns, "Ann's team deploys on Thursdays.", map[string]string{"source": "standup"})
	mem.Remember(ctx, memory.UserNamespace("bob"), "Bob deploys on Mondays.", nil)

	// Recall sees everything remembered before it, in its namespace only.
	hits, err := mem.Recall(ctx, ns, "when does the team deploy?", 3)
	if err != nil {
		log.Fatal(err)
	}
	for _, h := range hits {
		fmt.Println(h.Text, h.Meta)
	}
	// Output:
	// Ann's team deploys on Thursdays. map[source:standup]
}

func ExampleLocal_RecallFor() {
	ctx := context.Background()
	rt, mem, done := openExample()
	defer done()

	mem.Remember(ctx, memory.ResourcesNamespace, "The staging database resets every Sunday.", nil)
	s, _ := rt.NewUserSession(ctx, "Why is my staging data gone?")

	// The recall is recorded on the session, so a replay answers from the log.
	s, hits, err := mem.RecallFor(ctx, s, memory.ResourcesNamespace, "staging data", 5, memory.WithAgent("root.support"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(hits), "hit:", hits[0].Text)
	evs, _ := rt.Store().ReadStream(ctx, s.ID(), s.Version())
	p, _ := evs[0].Decode()
	rec := p.(*events.MemoryRecalled)
	fmt.Println(evs[0].Type, rec.Agent, rec.Query, len(rec.Hits))
	// Output:
	// 1 hit: The staging database resets every Sunday.
	// memory.recalled root.support staging data 1
}

func ExampleLocal_Commit() {
	ctx := context.Background()
	rt, mem, done := openExample()
	defer done()

	s, _ := rt.NewUserSession(ctx, "My cat is called Miso.")
	s, _ = s.Append(ctx, events.Chunk{Role: events.RoleAssistant, Content: "Noted: Miso the cat."})

	// Without an extractor, Commit archives the user and assistant text.
	ids, err := mem.Commit(ctx, memory.UserNamespace("ann"), s)
	if err != nil {
		log.Fatal(err)
	}
	items, _ := mem.List(ctx, memory.UserNamespace("ann"))
	fmt.Println(len(ids), "memories")
	for _, it := range items {
		fmt.Println(it.Meta["role"], it.Meta["chunk"], it.Text)
	}
	// Output:
	// 2 memories
	// user 0 My cat is called Miso.
	// assistant 1 Noted: Miso the cat.
}

func ExampleLocal_Forget() {
	ctx := context.Background()
	_, mem, done := openExample()
	defer done()

	ns := memory.AgentNamespace("root.coder")
	old, _ := mem.Remember(ctx, ns, "The build uses make.", nil)
	mem.Remember(ctx, ns, "The build uses just.", nil)
	if err := mem.Forget(ctx, ns, old); err != nil {
		log.Fatal(err)
	}
	hits, _ := mem.Recall(ctx, ns, "build", 5)
	for _, h := range hits {
		fmt.Println(h.Text)
	}
	// Output:
	// The build uses just.
}
