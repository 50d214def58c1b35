package proc

import (
	"os"
	"testing"
	"time"
)

// Output already in the pipes when the grace period ends is kept, even
// though a process outside the group holds them open: it is the command's
// output, only not read yet (a loaded machine once lost a command's stderr
// this way in the concurrency test).
func TestWaitUnread(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, err := w.Write([]byte("pending")); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	start := time.Now()
	go func() {
		time.Sleep(300 * time.Millisecond)
		buf := make([]byte, 16)
		r.Read(buf)
		close(done)
	}()
	waitUnread(make(chan struct{}), 10*time.Second, r)
	if elapsed := time.Since(start); elapsed < 250*time.Millisecond {
		t.Errorf("waitUnread returned after %s with bytes still in the pipe", elapsed)
	}
	<-done
	start = time.Now()
	waitUnread(make(chan struct{}), 10*time.Second, r)
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Errorf("waitUnread waited %s on an empty pipe", elapsed)
	}
	// A writer that never stops does not hold it past the limit.
	w.Write([]byte("more"))
	start = time.Now()
	waitUnread(make(chan struct{}), 100*time.Millisecond, r)
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("waitUnread ignored its limit: %s", elapsed)
	}
}
