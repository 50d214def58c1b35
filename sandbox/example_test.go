package sandbox_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/sandbox/local"
)

// A runtime owns a Registry (filled explicitly) and a Pool; sessions with
// the same placement share one sandbox, opened on first use.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "rath-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	reg := sandbox.NewRegistry(&local.Backend{})
	pool := sandbox.NewPool(reg)
	defer pool.Close()

	sb, err := pool.Get(ctx, events.Placement{Backend: "local", Spec: dir})
	if err != nil {
		log.Fatal(err)
	}
	change, err := sb.WriteFile(ctx, "notes/hello.txt", []byte("hello\n"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("wrote %s (before %q, after %.12s...)\n", change.Path, change.Before, change.After)

	res, err := sb.Exec(ctx, sandbox.ExecRequest{Command: "cat notes/hello.txt; echo done >&2; exit 3"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("stdout %q stderr %q exit %d\n", res.Stdout, res.Stderr, res.ExitCode)

	_, err = sb.ReadFile(ctx, "../outside.txt")
	fmt.Println(err)

	_, err = pool.Get(ctx, events.Placement{Backend: "docker", Spec: "x"})
	fmt.Println(err)
	// Output:
	// wrote notes/hello.txt (before "", after 5891b5b522d5...)
	// stdout "hello\n" stderr "done\n" exit 3
	// read ../outside.txt: sandbox: path escapes the workspace
	// sandbox: unknown backend "docker" (registered: local)
}
