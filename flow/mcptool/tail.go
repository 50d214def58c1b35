package mcptool

import (
	"strings"
	"sync"
)

// stderrTail is how much of a server's stderr is kept for error messages.
const stderrTail = 2 << 10

// tail is an io.Writer keeping the last max bytes written. The process's
// copying goroutine writes while callers read, hence the lock.
type tail struct {
	max int

	mu  sync.Mutex // protects buf
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String returns the kept bytes as valid UTF-8 (the cut may split a
// character), trimmed.
func (t *tail) String() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(strings.ToValidUTF8(string(t.buf), ""))
}
