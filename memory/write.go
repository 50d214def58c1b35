package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session"
)

// maxAppendAttempts bounds the retries of a namespace write that loses the
// optimistic-concurrency race to another process.
const maxAppendAttempts = 32

// maxWriters bounds the cached namespace heads; the cache is cleared when
// it grows past this.
const maxWriters = 1 << 14

// nsWriters serializes this process's writes per namespace and caches each
// namespace stream's version, so a write is one append with no read
// before it. Writes from other processes show up as conflicts, which carry
// the actual version to retry at.
type nsWriters struct {
	mu sync.Mutex // protects m
	m  map[string]*nsWriter
}

type nsWriter struct {
	mu      sync.Mutex // held for the whole append
	version int64      // -1: unknown, read it from the store
}

func (w *nsWriters) get(ns string) *nsWriter {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil || len(w.m) >= maxWriters {
		// Dropping entries is safe: a writer still in use keeps its own
		// pointer, and a second writer for the same namespace only costs
		// a conflict and a retry.
		w.m = map[string]*nsWriter{}
	}
	nw, ok := w.m[ns]
	if !ok {
		nw = &nsWriter{version: -1}
		w.m[ns] = nw
	}
	return nw
}

// appendNS appends the payloads build returns to ns's stream, in sc (a
// commit is made in its session's run). build gets the version the first
// payload will have, so ids can be derived from it; it is called again on
// each retry.
func (l *Local) appendNS(ctx context.Context, sc eventlog.Scope, ns string, build func(first int64) []events.Payload) ([]events.Event, error) {
	stream := events.MemoryStream(ns)
	w := l.writers.get(ns)
	w.mu.Lock()
	defer w.mu.Unlock()
	for range maxAppendAttempts {
		if w.version < 0 {
			v, err := l.store.StreamVersion(ctx, stream)
			if err != nil {
				return nil, err
			}
			w.version = v
		}
		stored, err := l.store.In(sc).Append(ctx, stream, w.version, build(w.version+1)...)
		var ce *eventlog.ConflictError
		if errors.As(err, &ce) && ce.Stream == stream {
			w.version = ce.Actual
			continue
		}
		if err != nil {
			// The append may or may not have happened (a cancelled
			// context); read the version again next time.
			w.version = -1
			return nil, err
		}
		w.version = stored[len(stored)-1].Version
		return stored, nil
	}
	return nil, fmt.Errorf("%w %q after %d attempts", ErrContention, ns, maxAppendAttempts)
}

// Remember appends a memory.remembered event and returns the memory's id,
// derived from the namespace and the event's stream version. It returns
// once the event is durable and does not wait for the index. Errors:
// ErrInvalid for an empty namespace or text, ErrContention, or the store's.
func (l *Local) Remember(ctx context.Context, ns, text string, meta map[string]string) (string, error) {
	if err := checkNamespace(ns); err != nil {
		return "", err
	}
	if strings.TrimSpace(text) == "" {
		return "", invalidf("remember in %q: empty text", ns)
	}
	var id string
	_, err := l.appendNS(ctx, eventlog.Scope{}, ns, func(first int64) []events.Payload {
		id = DeriveID(ns, first)
		return []events.Payload{events.MemoryRemembered{Namespace: ns, ID: id, Text: text, Meta: meta}}
	})
	if err != nil {
		return "", fmt.Errorf("memory: remember in %q: %w", ns, err)
	}
	return id, nil
}

// Forget appends a memory.forgotten tombstone for id. From then on Recall
// never returns it, even before the indexer has deleted it from the index.
// Errors: ErrNotFound if id is not a live memory of ns, ErrInvalid, or
// the store's.
func (l *Local) Forget(ctx context.Context, ns, id string) error {
	return l.ForgetBecause(ctx, ns, id, "", "")
}

// ForgetBecause is Forget with the reason and who decided it recorded on
// the tombstone. It is not part of Memory: a caller that has a reason
// checks for it (another backend may have nowhere to put one).
func (l *Local) ForgetBecause(ctx context.Context, ns, id, reason, by string) error {
	if err := checkNamespace(ns); err != nil {
		return err
	}
	if id == "" {
		return invalidf("forget in %q: empty id", ns)
	}
	release, err := l.acquire(ctx)
	if err != nil {
		return fmt.Errorf("memory: forget %s in %q: %w", id, ns, err)
	}
	defer release()
	live, err := l.isLive(ctx, ns, id)
	if err != nil {
		return fmt.Errorf("memory: forget %s in %q: %w", id, ns, err)
	}
	if !live {
		return fmt.Errorf("%w: %s in %q", ErrNotFound, id, ns)
	}
	stored, err := l.appendNS(ctx, eventlog.Scope{}, ns, func(int64) []events.Payload {
		return []events.Payload{events.MemoryForgotten{Namespace: ns, ID: id, Reason: reason, By: by}}
	})
	if err != nil {
		return fmt.Errorf("memory: forget %s in %q: %w", id, ns, err)
	}
	l.forgets.add(id, stored[0].Seq)
	return nil
}

// Commit stores what session s holds into ns, atomically with a
// memory.committed event naming the new ids. Without options it archives
// the text of each user and assistant chunk, with metadata session, chunk
// (its index), role and author (if set). WithExtractor stores the memos
// the extractor returns instead, with metadata session and model. Commit
// does not check whether s was committed before. Errors: ErrInvalid, the
// extractor's, or the store's.
func (l *Local) Commit(ctx context.Context, ns string, s *session.Session, opts ...CommitOption) ([]string, error) {
	plan, err := PlanCommit(ctx, ns, s, opts...)
	if err != nil {
		return nil, err
	}
	var ids []string
	_, err = l.appendNS(ctx, s.Manager().Scope(), ns, func(first int64) []events.Payload {
		ids = plan.IDs(first)
		return plan.Events(first)
	})
	if err != nil {
		return nil, fmt.Errorf("memory: commit %s to %q: %w", s.ID(), ns, err)
	}
	return ids, nil
}
