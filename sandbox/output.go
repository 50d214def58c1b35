package sandbox

// CappedBuffer is an io.Writer that keeps the first Limit bytes written to it
// and counts the rest without storing them. Its memory use is bounded by
// Limit however much is written, which is what lets Exec survive a command
// that prints 100 MB. Write never fails, so a copy into it never stops early
// and the command never sees a broken pipe.
//
// The zero value keeps nothing. A CappedBuffer is not safe for concurrent
// writes; give each stream its own.
type CappedBuffer struct {
	// Limit is the number of bytes kept.
	Limit int

	buf   []byte
	total int64
}

// NewCappedBuffer returns a buffer keeping limit bytes; limit <= 0 means
// DefaultMaxOutput.
func NewCappedBuffer(limit int) *CappedBuffer {
	if limit <= 0 {
		limit = DefaultMaxOutput
	}
	return &CappedBuffer{Limit: limit}
}

// Write keeps what fits under Limit and counts all of p.
func (b *CappedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	b.total += int64(n)
	if room := b.Limit - len(b.buf); room > 0 {
		if len(p) > room {
			p = p[:room]
		}
		if b.buf == nil {
			// Grow in steps rather than reserving Limit up front: most
			// commands print far less than the cap.
			b.buf = make([]byte, 0, min(b.Limit, max(len(p), 512)))
		}
		b.buf = append(b.buf, p...)
	}
	return n, nil
}

// Discard counts n bytes the stream produced that never reached the buffer
// (a backend dropped them in transit); they mark the buffer truncated.
func (b *CappedBuffer) Discard(n int64) { b.total += n }

// Bytes returns the kept bytes. The slice aliases the buffer.
func (b *CappedBuffer) Bytes() []byte { return b.buf }

// Total returns the number of bytes written, kept or not.
func (b *CappedBuffer) Total() int64 { return b.total }

// Truncated reports whether more was written than kept.
func (b *CappedBuffer) Truncated() bool { return b.total > int64(len(b.buf)) }
