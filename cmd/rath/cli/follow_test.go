package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath"
)

// waitFor polls until cond holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRun_EventsFollow(t *testing.T) {
	w := seed(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, Config{}, []string{"--dir", w.dir, "events", "--follow", "--stream", w.root, "--json"}, strings.NewReader(""), &out, &errb)
	}()
	waitFor(t, "the existing events", func() bool { return strings.Count(out.String(), "\n") == 5 })

	// Another writer (a second runtime on the same directory) appends.
	rt, err := rath.Open(t.Context(), w.dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.Session(t.Context(), w.root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(t.Context(), userChunk("one more")); err != nil {
		t.Fatal(err)
	}
	rt.Close()
	waitFor(t, "the new event", func() bool { return strings.Contains(out.String(), `"content":"one more"`) })

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("follow exited %d after cancel: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("follow did not stop after the context was canceled")
	}
	if n := strings.Count(out.String(), "\n"); n != 6 {
		t.Fatalf("followed %d events, want 6:\n%s", n, out.String())
	}
	if strings.Contains(out.String(), fmt.Sprintf(`"stream":%q`, w.fork)) {
		t.Fatal("--stream filter ignored while following")
	}
}
