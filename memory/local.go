package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"

	"github.com/gorath/rath/events"
)

// Defaults for LocalOptions fields left zero.
const (
	// DefaultBatchSize is the number of memory events indexed per bleve
	// batch. On-disk scorch persists each batch before returning, so
	// batching is what makes catch-up fast.
	DefaultBatchSize = 5000
	// DefaultPollInterval is how often the indexer looks for events that
	// another process appended (this process's appends wake it at once)
	// and mirrors its checkpoint to the database.
	DefaultPollInterval = time.Second
	// DefaultLockTimeout is how long OpenLocal waits for another process
	// to release the index before failing with ErrLocked.
	DefaultLockTimeout = 5 * time.Second
	// DefaultRerankCandidates is how many BM25 candidates embeddings
	// re-ranking considers.
	DefaultRerankCandidates = 50
	// CheckpointName is the index's row in the projection_checkpoints table.
	CheckpointName = "memory"
)

// LocalOptions configure a Local.
type LocalOptions struct {
	// Logger receives warnings: an index rebuilt because it was missing or
	// damaged, indexing failures the indexer retries. Nil means
	// slog.Default().
	Logger *slog.Logger
	// BatchSize is the number of events per index batch. Zero means
	// DefaultBatchSize.
	BatchSize int
	// PollInterval is how often the indexer polls for appends made by
	// other processes and mirrors its checkpoint. Zero means
	// DefaultPollInterval.
	PollInterval time.Duration
	// LockTimeout is how long OpenLocal waits for an index held by another
	// process. Zero means DefaultLockTimeout.
	LockTimeout time.Duration
	// Embedder, if set, turns on re-ranking: the best RerankCandidates BM25
	// candidates are re-ordered by cosine similarity between their
	// embeddings and the query's. Nil (the default) means BM25 only.
	Embedder Embedder
	// RerankCandidates is the number of BM25 candidates re-ranked. Zero
	// means DefaultRerankCandidates; it is never less than k.
	RerankCandidates int

	// afterFlush, if set, is called after each batch is durable in the
	// index, with the seq it accounts for. Tests use it.
	afterFlush func(seq int64)
}

// Local is the local memory: memory.* events in the event log, and a bleve
// BM25 index on disk that is a projection of them.
//
// Writes (Remember, Forget, Commit) append durable events and return; they
// never wait for the index. One background goroutine follows the log and
// indexes new events in batches, keeping its checkpoint inside the index
// so the two change together. Recall waits until the index has caught up
// with the log as it was when Recall was called, so a caller always
// recalls what it remembered.
//
// The index directory belongs to Local: a missing or damaged index is
// rebuilt from the log (with a warning), which deletes what was there. One
// process at a time may open it. Local is safe for concurrent use.
type Local struct {
	store *events.Store
	dir   string
	opts  LocalOptions
	log   *slog.Logger

	writers nsWriters
	forgets pendingForgets
	embeds  embedCache

	mu  sync.RWMutex // protects idx; held exclusively only to swap or close it
	idx bleve.Index
	// analyzer analyzes queries as the preparer analyzes texts.
	analyzer analysis.Analyzer

	stats atomic.Pointer[state] // the state searches score with

	// writeMu serializes writes to the index: indexer passes and Rebuild.
	writeMu  sync.Mutex
	st       state // guarded by writeMu: what idx durably holds
	scanned  int64 // guarded by writeMu: log seq processed (>= st.Seq)
	mirrored int64 // guarded by writeMu: seq last written to projection_checkpoints

	progress progress // what searches see
	durable  progress // what is on disk

	kick      chan struct{}
	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

var _ Memory = (*Local)(nil)

// OpenLocal opens the memory index at dir over store, creating it if
// needed, catches it up with the log, and starts the background indexer.
// The runtime passes <rath dir>/memory.bleve.
//
// A missing index is rebuilt from the log, and so is a damaged one (its
// directory is deleted first); both log a warning. Errors: ErrLocked if
// another process holds the index, ErrNotIndex if dir holds something
// else, ErrInvalid for a nil store or empty dir, or the failure to read
// the log or write the index.
func OpenLocal(ctx context.Context, store *events.Store, dir string, opts LocalOptions) (*Local, error) {
	if store == nil || dir == "" {
		return nil, invalidf("OpenLocal needs a store and a directory")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	if opts.RerankCandidates <= 0 {
		opts.RerankCandidates = DefaultRerankCandidates
	}
	l := &Local{
		store:    store,
		dir:      dir,
		opts:     opts,
		log:      opts.Logger.With("component", "memory", "dir", dir),
		mirrored: -1,
		kick:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	l.progress.init()
	l.durable.init()
	unlock, err := lockIndexDir(ctx, dir, opts.LockTimeout)
	if err != nil {
		return nil, err
	}
	idx, st, err := l.openIndex(ctx)
	if err != nil {
		unlock()
		return nil, err
	}
	// A rebuild that crashed leaves its scratch directory behind. It is
	// removed only now that this process holds the index.
	err = os.RemoveAll(rebuildDir(dir))
	unlock() // from here bleve's own lock keeps other processes out
	if err != nil {
		closeQuietly(idx)
		return nil, fmt.Errorf("memory: open: %w", err)
	}
	if l.analyzer, err = enAnalyzer(idx); err != nil {
		closeQuietly(idx)
		return nil, fmt.Errorf("memory: open: %w", err)
	}
	l.idx, l.st, l.scanned = idx, st, st.Seq
	l.publish(st)
	l.durable.advance(st.Seq)
	if err := l.pass(ctx); err != nil {
		closeQuietly(idx)
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.cancel = cancel
	go l.run(runCtx)
	return l, nil
}

// openIndex opens the index at l.dir, or creates it, rebuilding (by
// starting empty) when it is missing or unusable.
func (l *Local) openIndex(ctx context.Context) (bleve.Index, state, error) {
	kind, err := inspectDir(l.dir)
	if err != nil {
		return nil, state{}, err
	}
	switch kind {
	case dirMissing, dirEmpty:
		has, err := l.logHasMemories(ctx)
		if err != nil {
			return nil, state{}, err
		}
		if has {
			l.log.Warn("memory index missing; rebuilding it from the event log")
		}
		return createIndex(l.dir)
	}
	idx, st, err := openExisting(l.dir, l.opts.LockTimeout)
	if err == nil {
		err = l.matchesLog(ctx, st)
		if err != nil {
			closeQuietly(idx)
		}
	}
	if err == nil {
		// bleve silently falls back to an older snapshot when the newest
		// is unreadable. That index is consistent, and catching up from
		// its checkpoint repairs it, but say so.
		if recorded, rerr := l.recordedCheckpoint(ctx); rerr == nil && recorded > st.Seq {
			l.log.Warn("memory index is behind its recorded checkpoint (damaged or restored?); rebuilding the rest from the event log",
				"index_seq", st.Seq, "recorded_seq", recorded)
		}
	}
	var ce *corruptError
	if !errors.As(err, &ce) {
		return idx, st, err
	}
	l.log.Warn("memory index unusable; rebuilding it from the event log", "reason", ce.reason)
	if err := os.RemoveAll(l.dir); err != nil {
		return nil, state{}, fmt.Errorf("memory: remove damaged index: %w", err)
	}
	return createIndex(l.dir)
}

// matchesLog checks that the event the index's checkpoint names is in the
// log with the same hash; otherwise the index belongs to another log (or
// the log was replaced) and is a *corruptError.
func (l *Local) matchesLog(ctx context.Context, st state) error {
	if st.Seq == 0 {
		return nil
	}
	ev, err := l.store.Get(ctx, st.Seq)
	if errors.Is(err, events.ErrNotFound) {
		return corruptf("index checkpoint seq %d is past the end of the log", st.Seq)
	}
	if err != nil {
		return fmt.Errorf("memory: open: %w", err)
	}
	if ev.Hash != st.Hash {
		return corruptf("index checkpoint seq %d has hash %s, the log has %s", st.Seq, st.Hash, ev.Hash)
	}
	return nil
}

// recordedCheckpoint returns the checkpoint last mirrored to the
// database (0 if none).
func (l *Local) recordedCheckpoint(ctx context.Context) (int64, error) {
	var seq int64
	err := l.store.DB().GetContext(ctx, &seq, l.store.DB().Rebind(`SELECT seq FROM projection_checkpoints WHERE name = ?`), CheckpointName)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return seq, err
}

func (l *Local) logHasMemories(ctx context.Context) (bool, error) {
	evs, err := l.store.Read(ctx, events.Query{Types: indexedTypes, Limit: 1})
	if err != nil {
		return false, fmt.Errorf("memory: open: %w", err)
	}
	return len(evs) > 0, nil
}

// publish makes st the state searches score with.
func (l *Local) publish(st state) {
	l.stats.Store(&st)
}

// Close stops the indexer, waits (up to a bound) for the index to be on
// disk, records its checkpoint in the database (if the store is still
// open) and closes the index. Memories remembered but not yet indexed are
// indexed at the next open. Close does not close the store. Calls after
// the first return the first's result.
func (l *Local) Close() error {
	l.closeOnce.Do(func() {
		l.cancel()
		<-l.done
		l.progress.close()
		l.writeMu.Lock()
		// Cleanup runs on a context of its own: the caller's may be done.
		ctx, cancel := context.WithTimeout(context.Background(), persistTimeout)
		if err := l.durable.wait(ctx, l.st.Seq, func() {}); err != nil {
			l.log.Warn("memory index not fully on disk at close; the rest is indexed again at the next open", "err", err)
		}
		if err := l.mirror(ctx); err != nil && !errors.Is(err, events.ErrClosed) {
			l.log.Debug("memory: record checkpoint", "err", err)
		}
		cancel()
		l.writeMu.Unlock()
		l.mu.Lock()
		if l.idx != nil {
			l.closeErr = l.idx.Close()
			l.idx = nil
		}
		l.mu.Unlock()
	})
	return l.closeErr
}

// Dir returns the index directory.
func (l *Local) Dir() string { return l.dir }

// Checkpoint returns the log seq up to which the index is current.
func (l *Local) Checkpoint() int64 {
	seq, _ := l.progress.get()
	return seq
}

func rebuildDir(dir string) string { return dir + ".rebuild" }
