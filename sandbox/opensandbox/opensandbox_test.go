package opensandbox_test

import (
	"fmt"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/sandbox/opensandbox"
	"github.com/gorath/rath/sandbox/opensandbox/opensandboxtest"
	"github.com/gorath/rath/sandbox/sandboxtest"
)

const testKey = "test-api-key"

// MustServe starts a fake server whose sandboxes live under a fresh
// directory, and returns a backend pointed at it.
func MustServe(tb testing.TB, opts opensandboxtest.Options) (*opensandboxtest.Server, *opensandbox.Backend) {
	tb.Helper()
	if opts.Root == "" {
		root, err := filepath.EvalSymlinks(tb.TempDir())
		if err != nil {
			tb.Fatal(err)
		}
		opts.Root = root
	}
	if opts.APIKey == "" {
		opts.APIKey = testKey
	}
	if opts.Linger == 0 {
		// Streams stay open after their terminal event until the client
		// hangs up: a client that waited for the end of the body would
		// hang, not just be a second slower.
		opts.Linger = -1
	}
	srv := opensandboxtest.NewServer(opts)
	tb.Cleanup(srv.Close)
	return srv, &opensandbox.Backend{Domain: srv.Domain, APIKey: opts.APIKey, Image: "python:3.11"}
}

// workdirs hands out a fresh workspace below root for each sandbox.
func workdirs(root string) func(testing.TB) string {
	var n atomic.Int64
	return func(testing.TB) string {
		return "workdir=" + filepath.Join(root, fmt.Sprintf("ws%03d", n.Add(1)))
	}
}

func TestBackend_Conformance(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Pings every 50 ms so that every command stream carries some.
	_, b := MustServe(t, opensandboxtest.Options{Root: root, PingInterval: 50 * time.Millisecond})
	caps := b.Capabilities()
	caps.Isolated = false // the fake runs commands on the host
	sandboxtest.Run(t, b, sandboxtest.Options{
		Caps: caps,
		Spec: workdirs(root),
	})
}

func MustOpen(tb testing.TB, b *opensandbox.Backend, spec string) sandbox.Sandbox {
	tb.Helper()
	sb, err := b.Open(tb.Context(), spec)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sb.Close() })
	return sb
}

// The fake server's pinger used to emit after the command's handler had
// returned, racing with net/http's final flush (seen once in five make
// test runs). With a ping every 100µs nearly every command ends while a
// ping is due; run under -race, this fails without the fix.
func TestServer_PingsStopWithTheCommand(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, b := MustServe(t, opensandboxtest.Options{Root: root, PingInterval: 100 * time.Microsecond})
	sb := MustOpen(t, b, workdirs(root)(t))
	for i := range 50 {
		res, err := sb.Exec(t.Context(), sandbox.ExecRequest{Command: "echo " + strconv.Itoa(i)})
		if err != nil || string(res.Stdout) != strconv.Itoa(i)+"\n" {
			t.Fatalf("exec %d: %q, %v", i, res.Stdout, err)
		}
	}
}
