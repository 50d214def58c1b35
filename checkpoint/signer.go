package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/signkey"
)

// Defaults of SignerOptions.
const (
	DefaultEvery    = 1000
	DefaultInterval = 10 * time.Second
)

// SignerOptions configure a Signer.
type SignerOptions struct {
	// Every signs a checkpoint once the tree has grown by this many
	// events since the last one. Zero means DefaultEvery.
	Every int64
	// Interval signs the head, if it grew, this long after the last
	// checkpoint. Zero means DefaultInterval.
	Interval time.Duration
	// OnError, if set, is told of a checkpoint that could not be signed
	// or stored; the signer tries again at its next occasion. Nil means
	// the error is only returned by Close.
	OnError func(error)
}

// Signer signs the heads a store's writer commits. Give its Committed
// method to eventlog.Options.AfterCommit, open the store, then Start it;
// Close it before the store. It is safe for concurrent use.
type Signer struct {
	key  *signkey.Key
	opts SignerOptions
	poke chan struct{}

	mu      sync.Mutex
	pending eventlog.TreeHead // the newest head committed
	signed  int64             // the size of the last checkpoint signed
	err     error             // the last signing error
	store   *eventlog.Store
	stop    chan struct{}
	done    chan struct{}
}

// NewSigner returns a signer with key.
func NewSigner(key *signkey.Key, opts SignerOptions) *Signer {
	if opts.Every <= 0 {
		opts.Every = DefaultEvery
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	return &Signer{key: key, opts: opts, poke: make(chan struct{}, 1)}
}

// Committed records a commit's head (eventlog.Options.AfterCommit). It
// never blocks: signing happens on the signer's goroutine.
func (s *Signer) Committed(c eventlog.Commit) {
	s.mu.Lock()
	if c.Head.Size > s.pending.Size {
		s.pending = c.Head
	}
	now := c.RunsFinished > 0 || s.pending.Size-s.signed >= s.opts.Every
	s.mu.Unlock()
	if now {
		select {
		case s.poke <- struct{}{}:
		default:
		}
	}
}

// Start starts signing for store, picking up after the newest checkpoint
// this key stored.
func (s *Signer) Start(ctx context.Context, store *eventlog.Store) error {
	last, err := query(ctx, store, selectCheckpoints+` WHERE verifier_key = ? ORDER BY size DESC LIMIT 1`, s.key.VerifierKey())
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.store != nil {
		return errors.New("checkpoint: signer already started")
	}
	if len(last) > 0 {
		s.signed = last[0].Size
	}
	s.store, s.stop, s.done = store, make(chan struct{}), make(chan struct{})
	go s.loop(s.stop, s.done)
	return nil
}

func (s *Signer) loop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(s.opts.Interval)
	defer tick.Stop()
	for {
		select {
		case <-s.poke:
		case <-tick.C:
		case <-stop:
			// On PostgreSQL the tree is built after the commits, and its
			// builder tells Committed of the heads it builds: the last
			// commits' head is built now, if it is not yet.
			s.store.SyncTree(context.Background())
			s.signPending()
			return
		}
		s.signPending()
	}
}

// signPending signs the newest committed head if it is past the last
// checkpoint.
func (s *Signer) signPending() {
	s.mu.Lock()
	head, signed := s.pending, s.signed
	s.mu.Unlock()
	if head.Size <= signed {
		return
	}
	// The head comes from the writer that committed it: it is the tree
	// this process just wrote, not a value read back from the database.
	_, err := signHead(context.Background(), s.store, s.key, head, time.Now())
	s.mu.Lock()
	if err != nil {
		s.err = fmt.Errorf("checkpoint: sign size %d: %w", head.Size, err)
	} else {
		s.err = nil // the newer checkpoint covers what a failed one would have
		s.signed = max(s.signed, head.Size)
	}
	s.mu.Unlock()
	if err != nil && s.opts.OnError != nil {
		s.opts.OnError(err)
	}
}

// Signed returns the size of the last checkpoint signed (or found stored
// by Start).
func (s *Signer) Signed() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signed
}

// Close signs the last committed head, if it is not signed yet, and stops
// the signer. It returns the last signing error, if any. Close the
// signer before its store.
func (s *Signer) Close() error {
	s.mu.Lock()
	stop, done := s.stop, s.done
	s.stop = nil
	s.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
