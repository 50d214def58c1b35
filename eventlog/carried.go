package eventlog

import (
	"context"
	"errors"
	"fmt"
	"github.com/gorath/rath/events"
	"sync"
)

// Carried writes. Some records need to be durable only once something
// else is: the record that a run started matters once the run's first
// event exists, not before. Written on its own, such a record costs a
// commit (a lock, a WAL flush, a NOTIFY) that nothing waits for. A
// carried write is instead written by the next append made in a [Scope]
// that carries it, in that append's transaction and ahead of its writes,
// so both land together or not at all: the log holds the same events in
// the same order, one commit fewer.

// Carried is a write that rides along with the next append whose
// [Scope.Carry] is it (or a carried write nested in it). It is safe for
// concurrent use: of appends made at once, one carries it and the others
// wait for that one's outcome.
type Carried struct {
	w      Write
	n      int // events in w
	parent *Carried

	mu      sync.Mutex
	written bool
	sending chan struct{} // non-nil while an append carries it; closed when that append ends
	refused error         // a conflict on w's stream: final
}

// NewCarried returns w as a carried write, for the next append whose
// Scope.Carry it is. w is checked now (stream, expected version,
// payloads) and an invalid one is refused with ErrInvalid. Carried
// writes nest: with after set, an append carrying the result writes
// after first (unless an append already did), then w.
//
// If w's stream is at another version than w expects, the carrying
// append fails with the *ConflictError and so does every later append
// carrying it (Refused reports it): nothing written in its scope can
// land without w. An append that fails otherwise leaves w to the next
// one; after a failure whose outcome is unknown (a lost connection) in
// which w did land, that next append reports the conflict. Until an
// append has carried w, Flush writes it alone.
func NewCarried(w Write, after *Carried) (*Carried, error) {
	if w.Stream == "" {
		return nil, invalid("carry: empty stream")
	}
	if w.Expected < AnyVersion {
		return nil, invalid("carry: expected version %d", w.Expected)
	}
	if len(w.Events) == 0 {
		return nil, invalid("carry: a write of no events")
	}
	for _, p := range w.Events {
		if _, err := prepare(w.Stream, p); err != nil {
			return nil, err
		}
	}
	return &Carried{w: w, n: len(w.Events), parent: after}, nil
}

// Written reports whether an append has written c.
func (c *Carried) Written() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.written
}

// Refused returns the conflict that refused c, or nil.
func (c *Carried) Refused() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refused
}

// Flush writes c on its own, in a's run and under its lease, unless an
// append has written it; it returns the conflict that refused it, if one
// did.
func (c *Carried) Flush(ctx context.Context, a Appender) error {
	if c.Written() {
		return nil
	}
	if err := c.Refused(); err != nil {
		return err
	}
	// An empty append carrying c writes exactly c (and any unwritten
	// carried write it nests in).
	sc := a.sc
	sc.Carry = c
	_, err := a.s.appendWrites(ctx, sc, nil, nil)
	return err
}

// carriedFrom returns the unwritten carried writes of inner and those it
// nests in, outermost first, each marked as sent by this append; done
// records the append's outcome and must be called once it is known. With
// none to carry it returns nil and a no-op done. A carried write another
// append is sending is waited for, so that no append lands before one
// carrying a write it follows.
func carriedFrom(ctx context.Context, inner *Carried) (cs []*Carried, done func(error), err error) {
	if inner == nil {
		return nil, func(error) {}, nil
	}
	for {
		var chain []*Carried
		for c := inner; c != nil; c = c.parent {
			chain = append([]*Carried{c}, chain...)
		}
		var wait chan struct{}
		var refused error
		for _, c := range chain {
			c.mu.Lock()
			switch {
			case c.refused != nil:
				refused = c.refused
			case c.sending != nil:
				wait = c.sending
			case !c.written:
				c.sending = make(chan struct{})
				cs = append(cs, c)
			}
			c.mu.Unlock()
			if refused != nil || wait != nil {
				break
			}
		}
		if refused == nil && wait == nil {
			return cs, func(err error) { settle(cs, err) }, nil
		}
		// Hand back what this attempt marked, then wait or fail.
		settle(cs, errNotSent)
		cs = nil
		if refused != nil {
			return nil, nil, refused
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

// errNotSent settles carried writes an append marked but did not send.
var errNotSent = errors.New("eventlog: carried write not sent")

// settle records the outcome of an append that carried cs: written, or
// refused by a conflict on a carried write's own stream, or left for the
// next append (any other error, including an unknown outcome: a later
// append that finds the stream moved on reports the conflict).
func settle(cs []*Carried, err error) {
	var conflict *ConflictError
	errors.As(err, &conflict)
	for _, c := range cs {
		c.mu.Lock()
		switch {
		case err == nil:
			c.written = true
		case conflict != nil && conflict.Stream == c.w.Stream:
			c.refused = err
		}
		close(c.sending)
		c.sending = nil
		c.mu.Unlock()
	}
}

// withCarried returns writes with the carried writes cs ahead of them,
// and, for each event of the result, its position among the caller's
// events (-1 for a carried one). A caller's write to a carried write's
// stream is merged into it, since one append names a stream once; ok is
// false when that cannot be (the caller expects another version than the
// carried events lead to, or two carried writes share the stream), and
// the carried writes are then to be written on their own first.
func withCarried(cs []*Carried, writes []Write) (out []Write, pos []int, ok bool) {
	first := make([]int, len(writes)+1) // the caller's position of each write's first event
	for i, w := range writes {
		first[i+1] = first[i] + len(w.Events)
	}
	merged := make(map[int]bool, len(cs))
	into := make([][]int, len(cs)) // carried write → caller writes merged into it
	for j, c := range cs {
		for k := range j {
			if cs[k].w.Stream == c.w.Stream {
				return nil, nil, false
			}
		}
		for i, w := range writes {
			if w.Stream != c.w.Stream {
				continue
			}
			after := c.w.Expected + int64(c.n)
			if c.w.Expected != AnyVersion && w.Expected != AnyVersion && w.Expected != after || len(into[j]) > 0 {
				// (Two writes of the caller's to one stream: its append
				// is refused as such once the carried write went alone.)
				return nil, nil, false
			}
			merged[i] = true
			into[j] = append(into[j], i)
		}
	}
	add := func(i int) {
		for k := range writes[i].Events {
			pos = append(pos, first[i]+k)
		}
	}
	for j, c := range cs {
		w := c.w
		w.Events = append([]events.Payload(nil), c.w.Events...)
		w.Blobs = append([][]byte(nil), c.w.Blobs...)
		for range c.n {
			pos = append(pos, -1)
		}
		for _, i := range into[j] {
			w.Events = append(w.Events, writes[i].Events...)
			w.Blobs = append(w.Blobs, writes[i].Blobs...)
			add(i)
		}
		out = append(out, w)
	}
	for i, w := range writes {
		if !merged[i] {
			out = append(out, w)
			add(i)
		}
	}
	return out, pos, true
}

// ownEvents returns the caller's stored events, in the caller's order.
func ownEvents(stored []events.Event, pos []int) ([]events.Event, error) {
	if len(stored) != len(pos) {
		return nil, fmt.Errorf("eventlog: an append that carried writes stored %d events for %d written", len(stored), len(pos))
	}
	n := 0
	for _, p := range pos {
		if p >= 0 {
			n++
		}
	}
	out := make([]events.Event, n)
	for i, p := range pos {
		if p >= 0 {
			out[p] = stored[i]
		}
	}
	return out, nil
}
