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

	"github.com/gorath/rath/eventlog"
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
	// DefaultLockTimeout is how long a call that needs the index waits for
	// another process to release it before failing with ErrLocked.
	DefaultLockTimeout = 5 * time.Second
	// DefaultIdleClose is how long the index stays open after its last use
	// when no other process asks for it (one that does gets it at once).
	// Opening it again costs some milliseconds (see BenchmarkReopenRecall).
	DefaultIdleClose = 5 * time.Second
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
	// LockTimeout is how long a call that needs the index waits for an
	// index another process is using. Zero means DefaultLockTimeout.
	LockTimeout time.Duration
	// IdleClose is how long the index stays open (and locked) after its
	// last use while no other process waits for it; one that waits gets it
	// as soon as it is unused (checked every 25 ms). Zero means
	// DefaultIdleClose; negative keeps it open until Close or until
	// another process asks.
	IdleClose time.Duration
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
// process at a time may have it open, so Local opens it only while it is
// used and closes it once idle (LocalOptions.IdleClose): the processes of
// one store take turns. Local is safe for concurrent use.
type Local struct {
	store *eventlog.Store
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

	kick chan struct{}

	// lease keeps the index open while it is used; it is taken before
	// writeMu and mu.
	lease struct {
		sync.Mutex
		lock    *os.File // the flock held while the index is open; nil when closed
		want    *os.File // the want file, checked for waiting processes
		cancel  context.CancelFunc
		done    chan struct{} // closed when the indexer has stopped
		users   int
		lastUse time.Time
		idle    *time.Timer
		closed  bool // by Close, for good
	}
	closeErr error // guarded by lease
}

var _ Memory = (*Local)(nil)

// OpenLocal opens the memory index at dir over store, creating it if
// needed, and catches it up with the log. The runtime passes
// <rath dir>/memory.bleve.
//
// The index is open (and locked against other processes) only while it is
// used: it is closed once idle for IdleClose and opened again, caught up
// from its checkpoint, by the next call that needs it (Recall, Forget,
// Rebuild). Writes never need it. So any number of processes on one store
// use memory together; one waits only while another is using the index,
// and an *LockedError after LockTimeout names that process.
//
// A missing index is rebuilt from the log, and so is a damaged one (its
// directory is deleted first); both log a warning. Errors: ErrLocked (a
// *LockedError) if another process kept the index busy, ErrNotIndex if dir
// holds something else, ErrInvalid for a nil store or empty dir, or the
// failure to read the log or write the index.
func OpenLocal(ctx context.Context, store *eventlog.Store, dir string, opts LocalOptions) (*Local, error) {
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
	if opts.IdleClose == 0 {
		opts.IdleClose = DefaultIdleClose
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
	}
	l.progress.init()
	l.durable.init()
	release, err := l.acquire(ctx)
	if err != nil {
		return nil, err
	}
	release()
	return l, nil
}

// acquire opens the index if it is closed and keeps it open until release
// is called. Callers that read or write the index hold it.
func (l *Local) acquire(ctx context.Context) (release func(), err error) {
	l.lease.Lock()
	defer l.lease.Unlock()
	if l.lease.closed {
		return nil, ErrClosed
	}
	if l.lease.lock == nil {
		if err := l.open(ctx); err != nil {
			return nil, err
		}
	}
	l.lease.users++
	var once sync.Once
	return func() { once.Do(l.release) }, nil
}

func (l *Local) release() {
	l.lease.Lock()
	defer l.lease.Unlock()
	l.lease.users--
	l.lease.lastUse = time.Now()
	if l.lease.users > 0 || l.lease.lock == nil {
		return
	}
	if wanted(l.lease.want) {
		// Another process is waiting: let it have the index now rather
		// than at the next check.
		l.shut()
		return
	}
	l.armIdle(min(wantPoll, l.idleClose()))
}

// wantPoll is how often an idle open index checks whether another process
// is waiting for it.
const wantPoll = 25 * time.Millisecond

// idleClose is IdleClose, with "never" as a very long time.
func (l *Local) idleClose() time.Duration {
	if l.opts.IdleClose < 0 {
		return 1<<63 - 1
	}
	return l.opts.IdleClose
}

// armIdle schedules checkIdle after d. Caller holds lease.
func (l *Local) armIdle(d time.Duration) {
	if l.lease.idle == nil {
		l.lease.idle = time.AfterFunc(d, l.checkIdle)
	} else {
		l.lease.idle.Reset(d)
	}
}

// checkIdle closes an unused index when another process waits for it or
// when nobody used it for IdleClose; otherwise it checks again later.
func (l *Local) checkIdle() {
	l.lease.Lock()
	defer l.lease.Unlock()
	if l.lease.users > 0 || l.lease.lock == nil || l.lease.closed {
		return
	}
	left := l.idleClose() - time.Since(l.lease.lastUse)
	if left <= 0 || wanted(l.lease.want) {
		l.shut()
		return
	}
	l.armIdle(min(wantPoll, left))
}

// open takes the lock, opens (or creates, or repairs) the index, catches
// it up with the log and starts the indexer. Caller holds lease.
func (l *Local) open(ctx context.Context) error {
	lock, err := lockIndexDir(ctx, l.dir, l.opts.LockTimeout)
	if err != nil {
		return err
	}
	idx, st, err := l.openIndex(ctx)
	if err != nil {
		unlockIndexDir(lock)
		return err
	}
	// A rebuild that crashed leaves its scratch directory behind. It is
	// removed only now that this process holds the index.
	if err := os.RemoveAll(rebuildDir(l.dir)); err != nil {
		closeQuietly(idx)
		unlockIndexDir(lock)
		return fmt.Errorf("memory: open: %w", err)
	}
	if l.analyzer, err = enAnalyzer(idx); err != nil {
		closeQuietly(idx)
		unlockIndexDir(lock)
		return fmt.Errorf("memory: open: %w", err)
	}
	l.writeMu.Lock()
	l.mu.Lock()
	l.idx = idx
	l.mu.Unlock()
	// The index on disk may be ahead of what this process last saw (other
	// processes indexed since), or behind (it was rebuilt empty).
	l.st, l.scanned, l.mirrored = st, st.Seq, -1
	l.publish(st)
	l.progress.reset(st.Seq)
	l.durable.reset(st.Seq)
	l.forgets.applied(st.Seq)
	l.writeMu.Unlock()
	if err := l.pass(ctx); err != nil {
		l.mu.Lock()
		l.idx = nil
		l.mu.Unlock()
		closeQuietly(idx)
		unlockIndexDir(lock)
		return err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	l.lease.lock, l.lease.cancel, l.lease.done = lock, cancel, done
	// Best effort: without it, waiters get the index at IdleClose.
	l.lease.want, _ = os.OpenFile(wantPath(l.dir), os.O_CREATE|os.O_RDWR, 0o644)
	go l.run(runCtx, done)
	return nil
}

// shut stops the indexer, waits (up to a bound) for the index to be on
// disk, records its checkpoint in the database (if the store is still
// open), closes the index and releases the lock. Memories remembered but
// not yet indexed are indexed at the next open. Caller holds lease and
// the index is open.
func (l *Local) shut() {
	l.lease.cancel()
	<-l.lease.done
	l.writeMu.Lock()
	// Cleanup runs on a context of its own: the caller's may be done.
	ctx, cancel := context.WithTimeout(context.Background(), persistTimeout)
	if err := l.durable.wait(ctx, l.st.Seq, func() {}); err != nil {
		l.log.Warn("memory index not fully on disk at close; the rest is indexed again at the next open", "err", err)
	}
	if err := l.mirror(ctx); err != nil && !errors.Is(err, eventlog.ErrClosed) {
		l.log.Debug("memory: record checkpoint", "err", err)
	}
	cancel()
	l.writeMu.Unlock()
	l.mu.Lock()
	if l.idx != nil {
		if err := l.idx.Close(); err != nil {
			l.closeErr = err
		}
		l.idx = nil
	}
	l.mu.Unlock()
	unlockIndexDir(l.lease.lock)
	if l.lease.want != nil {
		l.lease.want.Close()
	}
	l.lease.lock, l.lease.want, l.lease.cancel, l.lease.done = nil, nil, nil, nil
	if l.lease.idle != nil {
		l.lease.idle.Stop()
	}
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
	if errors.Is(err, eventlog.ErrNotFound) {
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
	evs, err := l.store.Read(ctx, eventlog.Query{Types: indexedTypes, Limit: 1})
	if err != nil {
		return false, fmt.Errorf("memory: open: %w", err)
	}
	return len(evs) > 0, nil
}

// publish makes st the state searches score with.
func (l *Local) publish(st state) {
	l.stats.Store(&st)
}

// Close closes the index if it is open (see shut) and makes every later
// call fail with ErrClosed. Close does not close the store. Calls after
// the first return the first's result.
func (l *Local) Close() error {
	l.lease.Lock()
	defer l.lease.Unlock()
	if l.lease.closed {
		return l.closeErr
	}
	l.lease.closed = true
	if l.lease.lock != nil {
		l.shut()
	}
	l.progress.close()
	return l.closeErr
}

// IsOpen reports whether the index is open (and locked) at the moment;
// it closes once idle for IdleClose.
func (l *Local) IsOpen() bool {
	l.lease.Lock()
	defer l.lease.Unlock()
	return l.lease.lock != nil
}

// Dir returns the index directory.
func (l *Local) Dir() string { return l.dir }

// Checkpoint returns the log seq up to which the index is current.
func (l *Local) Checkpoint() int64 {
	seq, _ := l.progress.get()
	return seq
}

func rebuildDir(dir string) string { return dir + ".rebuild" }
