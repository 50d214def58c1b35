package opensandbox_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/sandbox/opensandbox"
	"github.com/gorath/rath/sandbox/opensandbox/opensandboxtest"
)

func count(reqs []string, prefix string) int {
	n := 0
	for _, r := range reqs {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

func TestBackend_OpenAndClose(t *testing.T) {
	root := must(filepath.EvalSymlinks(t.TempDir()))
	srv, b := MustServe(t, opensandboxtest.Options{Root: root, PendingPolls: 3, PingFailures: 2})
	sb, err := b.Open(t.Context(), "workdir="+root+"/ws")
	if err != nil {
		t.Fatal(err)
	}
	id := sb.ID()
	if got := srv.Sandboxes(); !slices.Equal(got, []string{id}) {
		t.Fatalf("server sandboxes = %v, want [%s]", got, id)
	}
	if sb.Workdir() != root+"/ws" {
		t.Errorf("Workdir = %q", sb.Workdir())
	}
	reqs := srv.Requests()
	if n := count(reqs, "GET /v1/sandboxes/"+id); n < 3 {
		t.Errorf("Open did not wait through Pending: %d GETs in %v", n, reqs)
	}
	if n := count(reqs, "GET /sandboxes/"+id+"/proxy/44772/ping"); n != 3 {
		t.Errorf("pings = %d, want 3 (two failures, one answer)", n)
	}
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	if got := srv.Sandboxes(); len(got) != 0 {
		t.Errorf("Close left %v on the server", got)
	}
	if n := count(srv.Requests(), "DELETE /v1/sandboxes/"+id); n != 1 {
		t.Errorf("%d DELETEs for %s", n, id)
	}
	if err := sb.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestBackend_FailedOpenDeletesTheSandbox(t *testing.T) {
	root := must(filepath.EvalSymlinks(t.TempDir()))
	srv, b := MustServe(t, opensandboxtest.Options{Root: root})
	// The fake refuses a workspace outside its root, so Open fails after
	// the create.
	sb, err := b.Open(t.Context(), "workdir="+filepath.Join(t.TempDir(), "outside"))
	if err == nil {
		sb.Close()
		t.Fatal("Open succeeded")
	}
	if ids := srv.Sandboxes(); len(ids) != 0 {
		t.Errorf("a sandbox whose Open failed was left on the server: %v", ids)
	}
	if n := count(srv.Requests(), "DELETE /v1/sandboxes/"); n != 1 {
		t.Errorf("%d DELETEs, want 1", n)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestBackend_Attach(t *testing.T) {
	root := must(filepath.EvalSymlinks(t.TempDir()))
	srv, b := MustServe(t, opensandboxtest.Options{Root: root})
	owner := MustOpen(t, b, "workdir="+root+"/ws")
	if _, err := owner.WriteFile(t.Context(), "shared.txt", []byte("from the owner")); err != nil {
		t.Fatal(err)
	}
	attached, err := b.Open(t.Context(), "id="+owner.ID()+"&workdir="+root+"/ws")
	if err != nil {
		t.Fatal(err)
	}
	if attached.ID() != owner.ID() {
		t.Errorf("attached to %s, want %s", attached.ID(), owner.ID())
	}
	if data, err := attached.ReadFile(t.Context(), "shared.txt"); err != nil || string(data) != "from the owner" {
		t.Errorf("attached read = %q, %v", data, err)
	}
	if err := attached.Close(); err != nil {
		t.Fatal(err)
	}
	if got := srv.Sandboxes(); !slices.Equal(got, []string{owner.ID()}) {
		t.Errorf("closing an attached sandbox deleted it: %v", got)
	}
	_, err = b.Open(t.Context(), "id=00000000-0000-4000-8000-000000000000")
	if !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("attach to a missing id: %v", err)
	}
}

func TestBackend_OpenErrors(t *testing.T) {
	srv, _ := MustServe(t, opensandboxtest.Options{})
	tests := []struct {
		name    string
		b       *opensandbox.Backend
		spec    string
		status  int
		code    string
		message string
		is      error
	}{
		{"missing key", &opensandbox.Backend{Domain: srv.Domain, APIKey: ""}, "", 401, "MISSING_API_KEY", "not provided", nil},
		{"wrong key", &opensandbox.Backend{Domain: srv.Domain, APIKey: "nope"}, "", 401, "INVALID_API_KEY", "invalid", nil},
		{"lifetime under a minute", &opensandbox.Backend{Domain: srv.Domain, APIKey: testKey, Lifetime: 30 * time.Second}, "", 422, "", "body.timeout: Input should be greater than or equal to 60", nil},
		{"unreachable", &opensandbox.Backend{Domain: "127.0.0.1:1", APIKey: testKey}, "", 0, "", "", sandbox.ErrUnavailable},
		{"bad spec", &opensandbox.Backend{Domain: srv.Domain, APIKey: testKey}, "flavour=large", 0, "", "", sandbox.ErrInvalidSpec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "missing key" {
				t.Setenv("OPEN_SANDBOX_API_KEY", "")
			}
			_, err := tt.b.Open(t.Context(), tt.spec)
			if err == nil {
				t.Fatal("Open succeeded")
			}
			if tt.is != nil {
				if !errors.Is(err, tt.is) {
					t.Errorf("err = %v, want %v", err, tt.is)
				}
				return
			}
			var apiErr *opensandbox.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v (%T), want *APIError", err, err)
			}
			if apiErr.Status != tt.status || apiErr.Code != tt.code || !strings.Contains(apiErr.Message, tt.message) {
				t.Errorf("APIError = %+v, want status %d code %q message ~%q", apiErr, tt.status, tt.code, tt.message)
			}
		})
	}
	if got := srv.Sandboxes(); len(got) != 0 {
		t.Errorf("failed opens left sandboxes: %v", got)
	}
}

func TestBackend_Environment(t *testing.T) {
	root := must(filepath.EvalSymlinks(t.TempDir()))
	srv, _ := MustServe(t, opensandboxtest.Options{Root: root})
	t.Setenv("OPEN_SANDBOX_DOMAIN", "http://"+srv.Domain)
	t.Setenv("OPEN_SANDBOX_API_KEY", testKey)
	sb := MustOpen(t, &opensandbox.Backend{}, "image=python:3.11&workdir="+root+"/ws")
	res, err := sb.Exec(t.Context(), sandbox.ExecRequest{Command: "echo from env config"})
	if err != nil || string(res.Stdout) != "from env config\n" {
		t.Errorf("exec = %q, %v", res.Stdout, err)
	}
}

func TestSandbox_StreamVariants(t *testing.T) {
	root := must(filepath.EvalSymlinks(t.TempDir()))
	_, b := MustServe(t, opensandboxtest.Options{Root: root, DataPrefix: true, MaxLine: 1000})
	b.MaxFrame = 4096
	sb := MustOpen(t, b, "workdir="+root+"/ws")
	tests := []struct {
		name, command string
		stdout        string
		truncated     bool
		minBytes      int64
	}{
		{"data: prefix", "echo one; echo; echo three", "one\n\nthree\n", false, 11},
		{"no final newline", "printf partial", "partial\n", false, 8},
		// The fake splits lines at 1000 bytes; each piece is a line.
		{"long line split by the server", "head -c 2500 /dev/zero | tr '\\0' x", strings.Repeat("x", 1000) + "\n" + strings.Repeat("x", 1000) + "\n" + strings.Repeat("x", 500) + "\n", false, 2503},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := sb.Exec(t.Context(), sandbox.ExecRequest{Command: tt.command})
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Stdout) != tt.stdout || res.StdoutTruncated != tt.truncated || res.StdoutBytes < tt.minBytes {
				t.Errorf("stdout %q truncated %v bytes %d; want %q %v >= %d", res.Stdout, res.StdoutTruncated, res.StdoutBytes, tt.stdout, tt.truncated, tt.minBytes)
			}
		})
	}
}

func TestSandbox_OversizeFrameDropped(t *testing.T) {
	root := must(filepath.EvalSymlinks(t.TempDir()))
	_, b := MustServe(t, opensandboxtest.Options{Root: root})
	b.MaxFrame = 1024
	sb := MustOpen(t, b, "workdir="+root+"/ws")
	res, err := sb.Exec(t.Context(), sandbox.ExecRequest{Command: "echo before; head -c 10000 /dev/zero | tr '\\0' x; echo; echo after; head -c 5000 /dev/zero | tr '\\0' e >&2"})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.Stdout); got != "before\nafter\n" {
		t.Errorf("stdout %q: the oversize frame should be dropped, its neighbours kept", got)
	}
	if !res.StdoutTruncated || res.StdoutBytes < 10000 {
		t.Errorf("dropped frame not counted: truncated %v, %d bytes", res.StdoutTruncated, res.StdoutBytes)
	}
	if len(res.Stderr) != 0 || !res.StderrTruncated || res.StderrBytes < 5000 {
		t.Errorf("stderr frame: kept %d, truncated %v, %d bytes", len(res.Stderr), res.StderrTruncated, res.StderrBytes)
	}
}

func TestSandbox_CancelInterruptsRemoteCommand(t *testing.T) {
	root := must(filepath.EvalSymlinks(t.TempDir()))
	srv, b := MustServe(t, opensandboxtest.Options{Root: root})
	sb := MustOpen(t, b, "workdir="+root+"/ws")
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(300*time.Millisecond, cancel)
	_, err := sb.Exec(ctx, sandbox.ExecRequest{Command: "sleep 600"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	// execd does not tie a command to its request: the client must kill it.
	if n := count(srv.Requests(), "DELETE /sandboxes/"+sb.ID()+"/proxy/44772/command"); n != 1 {
		t.Errorf("interrupt requests = %d, want 1: %v", n, srv.Requests())
	}
}

func TestSandbox_StdinUnsupported(t *testing.T) {
	root := must(filepath.EvalSymlinks(t.TempDir()))
	_, b := MustServe(t, opensandboxtest.Options{Root: root})
	sb := MustOpen(t, b, "workdir="+root+"/ws")
	_, err := sb.Exec(t.Context(), sandbox.ExecRequest{Command: "cat", Stdin: []byte("x")})
	if !errors.Is(err, sandbox.ErrUnsupported) || !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("stdin: %v", err)
	}
}
