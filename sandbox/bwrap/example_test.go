//go:build integration

package bwrap_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/sandbox/bwrap"
)

func ExampleBackend() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "rath-bwrap-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	sb, err := (&bwrap.Backend{}).Open(ctx, dir)
	if err != nil {
		log.Fatal(err) // sandbox.ErrUnavailable says why bubblewrap cannot run
	}
	defer sb.Close()

	res, err := sb.Exec(ctx, sandbox.ExecRequest{Command: "pwd; echo hi > note.txt; touch /usr/x 2>/dev/null || echo read-only system"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(res.Stdout))
	data, _ := os.ReadFile(dir + "/note.txt") // the workspace is the host directory
	fmt.Print(string(data))
	// Output:
	// /workspace
	// read-only system
	// hi
}
