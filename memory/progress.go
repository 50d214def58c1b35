package memory

import (
	"context"
	"sync"
)

// progress is how far searches can see into the log: every memory event
// at or below seq is in the index. Waiters block until it passes a target,
// the indexer reports a failure, or Local closes. It broadcasts by closing
// and replacing a channel, so the indexer never blocks on a waiter.
type progress struct {
	mu     sync.Mutex // protects the fields below
	seq    int64
	err    error // the indexer's last failure, cleared by its next success
	closed bool
	ch     chan struct{}
}

func (p *progress) init() { p.ch = make(chan struct{}) }

func (p *progress) get() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seq, p.err
}

func (p *progress) advance(seq int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if seq > p.seq {
		p.seq = seq
	}
	p.err = nil
	p.wake()
}

// reset moves seq back, after the index was replaced by an empty one.
func (p *progress) reset(seq int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq = seq
	p.wake()
}

func (p *progress) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.err = err
	p.wake()
}

func (p *progress) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.wake()
}

func (p *progress) wake() {
	close(p.ch)
	p.ch = make(chan struct{})
}

// wait blocks until seq >= target. kick is called each time it has to
// wait, to hurry the indexer (which may be asleep between polls when the
// target was appended by another process).
func (p *progress) wait(ctx context.Context, target int64, kick func()) error {
	for {
		p.mu.Lock()
		seq, err, closed, ch := p.seq, p.err, p.closed, p.ch
		p.mu.Unlock()
		switch {
		case seq >= target:
			return nil
		case closed:
			return ErrClosed
		case err != nil:
			return err
		}
		kick()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// pendingForgets are tombstones written but not yet applied to the index.
// Recall drops hits among them, so a forgotten memory is never returned,
// even by a recall racing with the indexer.
type pendingForgets struct {
	mu  sync.Mutex       // protects ids
	ids map[string]int64 // id -> seq of its memory.forgotten event
}

func (f *pendingForgets) add(id string, seq int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ids == nil {
		f.ids = map[string]int64{}
	}
	f.ids[id] = seq
}

// applied drops the tombstones the index has absorbed (seq <= upTo).
func (f *pendingForgets) applied(upTo int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, seq := range f.ids {
		if seq <= upTo {
			delete(f.ids, id)
		}
	}
}

func (f *pendingForgets) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.ids)
}

func (f *pendingForgets) has(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.ids[id]
	return ok
}
