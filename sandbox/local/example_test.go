package local_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/sandbox/local"
)

func ExampleBackend() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "rath-local-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	b := &local.Backend{Timeout: 30 * time.Second}
	sb, err := b.Open(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close()

	res, err := sb.Exec(ctx, sandbox.ExecRequest{Command: "echo hello > greeting.txt; ln -s /etc/passwd leak"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("exit", res.ExitCode)
	data, _ := sb.ReadFile(ctx, "greeting.txt")
	fmt.Printf("%q\n", data)

	// The symlink the command made cannot be followed out of the workspace.
	_, err = sb.ReadFile(ctx, "leak")
	fmt.Println(errors.Is(err, sandbox.ErrPathEscape))

	// Output beyond the cap is counted, not kept.
	res, _ = sb.Exec(ctx, sandbox.ExecRequest{Command: "seq 1 100000", MaxStdout: 8})
	fmt.Printf("%q truncated=%v total=%d\n", res.Stdout, res.StdoutTruncated, res.StdoutBytes)
	// Output:
	// exit 0
	// "hello\n"
	// true
	// "1\n2\n3\n4\n" truncated=true total=588895
}
