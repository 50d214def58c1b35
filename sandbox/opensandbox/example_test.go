package opensandbox_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/sandbox/opensandbox"
	"github.com/gorath/rath/sandbox/opensandbox/opensandboxtest"
)

func ExampleBackend() {
	ctx := context.Background()
	// A real deployment sets OPEN_SANDBOX_DOMAIN and OPEN_SANDBOX_API_KEY;
	// the example talks to the in-process fake.
	root, err := os.MkdirTemp("", "rath-opensandbox-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	root, _ = filepath.EvalSymlinks(root)
	srv := opensandboxtest.NewServer(opensandboxtest.Options{Root: root, APIKey: "secret"})
	defer srv.Close()

	b := &opensandbox.Backend{Domain: srv.Domain, APIKey: "secret"}
	sb, err := b.Open(ctx, "image=python:3.11&workdir="+root+"/workspace")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := sb.WriteFile(ctx, "main.py", []byte("print('hi')\n")); err != nil {
		log.Fatal(err)
	}
	res, err := sb.Exec(ctx, sandbox.ExecRequest{Command: "cat main.py; exit 2"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q exit %d\n", res.Stdout, res.ExitCode)
	fmt.Println("sandboxes on the server:", len(srv.Sandboxes()))
	sb.Close()
	fmt.Println("after Close:", len(srv.Sandboxes()))
	// Output:
	// "print('hi')\n" exit 2
	// sandboxes on the server: 1
	// after Close: 0
}
