package session_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/gorath/rath"
	"github.com/gorath/rath/session"
)

// PrepareNew builds sessions without writing them; the caller appends
// their writes in one transaction, so they exist together or not at all.
func ExampleManager_PrepareNew() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rath-example")
	defer os.RemoveAll(dir)
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	var prepared []session.Prepared
	for _, text := range []string{"first", "second"} {
		p, err := rt.PrepareUserSession(ctx, text, "", "")
		if err != nil {
			log.Fatal(err)
		}
		prepared = append(prepared, p)
	}
	if _, err := rt.Store().AppendWrites(ctx, prepared[0].Write, prepared[1].Write); err != nil {
		log.Fatal(err)
	}
	s, _ := rt.Session(ctx, prepared[1].ID)
	fmt.Println(s.Chunks()[0].Content)
	// Output:
	// second
}
