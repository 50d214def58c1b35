package eventlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorath/rath/events"

	"github.com/gorath/rath/internal/stmtcache"
	"github.com/gorath/rath/keyring"
	"github.com/jmoiron/sqlx"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Defaults for Options fields left zero.
const (
	// DefaultBlobThreshold is the payload size in bytes above which a
	// payload is stored in blobs and referenced by hash.
	DefaultBlobThreshold = 16 << 10
	// DefaultMaxBatch is the most events one group commit takes.
	DefaultMaxBatch = 1024
	// DefaultReadConns is the size of the read pool.
	DefaultReadConns = 4
	// DefaultReadMmapBytes is how much of the database file each read
	// connection maps (see Options.ReadMmapBytes).
	DefaultReadMmapBytes = 1 << 30
	// DefaultBusyTimeout is how long a write waits for the write lock.
	DefaultBusyTimeout = 10 * time.Second
)

// Expected stream versions with special meaning.
const (
	// AnyVersion skips the optimistic concurrency check.
	AnyVersion int64 = -1
	// NoStream expects the stream not to exist yet.
	NoStream int64 = 0
)

// Options configure a Store.
type Options struct {
	// Path is the SQLite database file. Its schema must already be migrated
	// (package migrations); Open does not create tables.
	Path string
	// DSN, if set, opens a PostgreSQL database instead (postgres://…; see
	// IsPostgresDSN) and Path, InMemory and Synchronous are ignored. Its
	// schema must already be migrated too. Many processes on many machines
	// can share it: the chain is serialized by a lock row, and every
	// process's subscribers wake on LISTEN/NOTIFY.
	DSN string
	// DiscardBlobs drops the blobs of Write.Blobs instead of storing them
	// (payloads over BlobThreshold are still stored): for a strict replay's
	// scratch store, where nothing reads them and only events are compared.
	DiscardBlobs bool
	// InMemory makes Path the name of an in-memory database (see DSN),
	// for throwaway stores such as a replay's scratch store. The caller
	// keeps a connection open for its whole life.
	InMemory bool
	// WithoutTree keeps no Merkle tree over an InMemory store's events (no
	// tree hashes, no tree head): for a throwaway store whose events are
	// compared with another log's and never verified, as a replay's
	// scratch store's are. Each event still has its leaf hash; Verify of
	// such a store fails at its first event, whose tree is missing.
	// Hashing and storing the tree cost a replay a fifth of its time.
	WithoutTree bool
	// LeaveTree (PostgreSQL) leaves the Merkle tree over this process's
	// commits to the next process that builds it: the tree builder opens
	// no connection at Open and builds nothing after a commit or at Close,
	// only when this process reads the tree (SyncTree). For a short-lived
	// process that appends and exits, such as "rath submit", which then
	// opens one connection fewer; a process that keeps running (a worker,
	// the console) builds the tree over everyone's commits. Ignored with
	// AfterCommit, whose heads come from the builds, and on SQLite, whose
	// appends build the tree. False (the default) builds at Open, after
	// commits and at Close.
	LeaveTree bool
	// HMACKey, if set, keys the hash chain with HMAC-SHA256, so only holders
	// of the key can produce a chain that verifies. Zero means plain SHA-256.
	HMACKey []byte
	// BlobThreshold is the payload size in bytes above which a payload goes
	// to blobs. Zero means DefaultBlobThreshold; negative disables blobs.
	BlobThreshold int
	// MaxBatch caps the events per group commit. Zero means DefaultMaxBatch.
	MaxBatch int
	// ReadConns is the read pool size. Zero means DefaultReadConns.
	ReadConns int
	// PostgresReadPool, with DSN, is an open pool on the database the DSN
	// names, from OpenPostgresReadPool, to serve the store's reads: a
	// process that checked the schema through it reuses its connection
	// instead of opening another one. The store takes it over: Close
	// closes it, and so does an Open that fails.
	PostgresReadPool *sql.DB
	// ReadMmapBytes is how much of a SQLite database file each read
	// connection maps into memory (SQLite's mmap_size): reads of pages in
	// the map skip a system call and a copy each, which is most of the
	// cost of reading a session's chunks from the log on a connection with
	// a cold page cache. Zero means DefaultReadMmapBytes; negative turns it
	// off. The trade-off (SQLite's): an I/O error on a mapped page, such
	// as a failing disk, stops the process with a fault instead of
	// returning an error. The writer never maps.
	ReadMmapBytes int64
	// Synchronous is SQLite's synchronous mode for the writer: "FULL" (the
	// default: every commit is fsynced, so a returned Append survives power
	// loss), "NORMAL" (survives a process crash, not power loss) or "OFF"
	// (for throwaway stores such as a replay's scratch store).
	Synchronous string
	// BusyTimeout is how long a write waits for another connection's
	// write lock before failing with a *StorageError matching ErrBusy.
	// Zero means DefaultBusyTimeout.
	BusyTimeout time.Duration
	// Clock stamps the at column. Nil means time.Now. The time is recorded,
	// never used for ordering.
	Clock func() time.Time
	// Projectors are run for every appended event inside the append's
	// transaction, in order.
	Projectors []Projector
	// AfterCommit, if set, is called on the writer goroutine after each
	// commit of appended events, with the Merkle tree head as of that
	// commit: how a checkpoint signer (package checkpoint) learns of new
	// heads without polling the database. It must return quickly and must
	// not call the store. Nil means no call.
	AfterCommit func(Commit)
	// Redactor, if set, removes secrets from every payload and blob before
	// it is hashed and written, and each removal is recorded on
	// StreamRedactions (see package secret).
	Redactor Redactor
	// Sealer, if set, seals every payload and blob (after the Redactor,
	// before the leaf is computed) under the data key of its append's
	// subject, and reads open them (seal.go). Nil stores content in
	// clear; reads of sealed content then fail.
	Sealer Sealer

	// afterVersionRead, for tests, runs when the writer has read
	// data_version and before it reads the chain tail.
	afterVersionRead func()
	// chainRows, for tests, makes the writer write what a rath before the
	// Merkle log wrote: hash-chain rows without a salt, and no tree (the
	// schema may be one without tree_hashes).
	chainRows bool
	// withoutWriteGate, for benchmarks, leaves SQLite's busy handler
	// alone to order the writers of several processes, as before the
	// write gate (writegate_unix.go).
	withoutWriteGate bool
	// lingerFor, for tests, replaces lingerMax.
	lingerFor time.Duration
}

// Projector updates a read model from events. It runs on the writer
// goroutine inside the transaction that appends the event, so a read after
// Append returns sees its effect; an error rolls back the whole Append.
type Projector interface {
	// Project applies one event. p is the decoded payload, always a
	// pointer to its struct.
	Project(ctx context.Context, tx *Tx, ev *events.Event, p events.Payload) error
}

// RequestProjector is a Projector that may hold writes back while one
// Append's events are projected (several updates of one row become one,
// say): EndRequest runs after the request's last event, in the same
// transaction and savepoint, so its error still refuses the whole Append.
// State kept between the calls belongs in Tx.Value, which lives for the
// request.
type RequestProjector interface {
	Projector
	EndRequest(ctx context.Context, tx *Tx) error
}

// Write is a set of events for one stream, appended at an expected version.
type Write struct {
	Stream   string
	Expected int64
	Events   []events.Payload
	// Blobs are stored in the same transaction, so events can reference
	// them by BlobHash.
	Blobs [][]byte
}

// Commit describes one commit of appended events, for Options.AfterCommit.
type Commit struct {
	// Head is the Merkle tree head as of the commit: its size is the last
	// seq committed.
	Head TreeHead
	// RunsFinished counts the run.finished events of the commit: the end
	// of a run, when a signer signs a checkpoint at once.
	RunsFinished int
}

// Store is the event log. It is safe for concurrent use.
type Store struct {
	opts Options
	d    dialect  // the database's (dialect.go)
	wdb  *sql.DB  // one connection, used only by the writer goroutine
	rdb  *sqlx.DB // read pool
	// kdb is a sealed store's keyring's pool (nil without a Sealer):
	// every Sealer call outside the writer's transaction goes through
	// it, not the read pool. A reader that holds a read connection while
	// it opens what it reads (a session's chunks, scanned row by row)
	// would otherwise wait for a second one for a key it has not cached,
	// and as many such readers as the pool has connections waited for
	// each other for ever: a worker's first runs hung so. A key read
	// holds its connection for one statement and waits for nothing else.
	kdb *sql.DB
	// q runs the fixed stream reads through prepared statements.
	q      *stmtcache.Cache
	reqs   chan *request
	stop   chan struct{}
	done   chan struct{}
	closed sync.Once

	commits, requests, evs atomic.Int64  // for Stats
	redone                 atomic.Int64  // for Stats
	late, missed           atomic.Int64  // for Stats
	roundTrips             *atomic.Int64 // the writer connection's, for Stats

	// inflight counts the callers between the start of an append and its
	// answer (see request.arriving), and other callers inside send: the
	// writer lingers for those it has not yet taken (loop.go).
	inflight atomic.Int64

	notifyMu sync.Mutex // protects notifyCh
	notifyCh chan struct{}

	// severalReads is the turn of the one reader that holds several read
	// connections at once (SeveralReads).
	severalReads chan struct{}

	rehash rehashes // blobs the Redactor changed
	// legacyRows writes rows as before the compact row format (hex hash,
	// whole payloads): tests build mixed logs with it.
	legacyRows bool

	// Owned by the writer goroutine.
	w writerState
	// tree builds the Merkle tree after the commits (PostgreSQL; nil on
	// SQLite, whose writer builds it inline): latetree.go.
	tree *treeBuilder
}

// DebugStopHoldingLockEnv, set to 1 in a process's environment, makes its
// first append on a PostgreSQL store stop the process with SIGSTOP right
// after it took the chain lock, inside its transaction: a fault
// injection for tests of what a paused writer does to the others. Never
// set it otherwise.
const DebugStopHoldingLockEnv = "RATH_DEBUG_STOP_HOLDING_CHAIN_LOCK"

type item struct {
	typ     string
	version int
	payload []byte
	p       events.Payload
	// sealed is payload sealed under its subject's key (seal.go), what
	// the row stores and the leaf commits to; nil stores payload.
	sealed []byte
}

// stored is what the row keeps of the item's payload.
func (it *item) stored() []byte {
	if it.sealed != nil {
		return it.sealed
	}
	return it.payload
}

type pendingWrite struct {
	stream   string
	expected int64
	items    []item
	blobs    [][]byte
	// sealedBlobs, if set, are blobs sealed (seal.go), stored under
	// blobKeys: their plaintext's address and their subject's key id.
	sealedBlobs [][]byte
	blobKeys    []string
	// key is the data key the write's payloads are sealed under (nil:
	// in clear); its projectors seal what they derive under it too.
	key *keyring.DataKey
}

type request struct {
	ctx    context.Context
	runID  string
	writes []pendingWrite
	fn     func(context.Context, *Tx) error
	// txFn, for AppendTx, runs in the append's transaction after its
	// events are written.
	txFn func(context.Context, *sql.Tx) error
	// lease, from the append's Scope, fences the request's appends.
	lease *Lease
	n     int
	reply chan result
	// arriving is set while the request is counted in Store.inflight
	// before it reached send: from the start of the append, so that the
	// writer waits for a caller still encoding and sealing its events
	// (sealing made callers come back late for the batch the last commit
	// released them into), until send takes the count over.
	arriving bool
}

type result struct {
	events []events.Event
	err    error
}

// DSN returns the SQLite data source name for a database file, or, with
// inMemory, for an in-memory database named path (SQLite's memdb VFS,
// shared by every connection of the process that opens the same name, and
// gone when the last one closes). Each pragma becomes a _pragma parameter.
//
// The DSN is a file: URI with the path percent-encoded, so a path holding
// '?', '#', '%', spaces or any other byte names that file and nothing
// else ("/tmp/we?ird" must not open "/tmp/we").
func DSN(path string, inMemory bool, pragmas ...string) string {
	v := url.Values{}
	for _, p := range pragmas {
		v.Add("_pragma", p)
	}
	if inMemory {
		v.Set("vfs", "memdb")
		return "file:" + escapePath("/"+strings.TrimLeft(path, "/")) + "?" + v.Encode()
	}
	return "file:" + escapePath(path) + "?" + v.Encode()
}

// escapePath percent-encodes a path for a SQLite URI, which decodes %HH
// and ends the path at '?' or '#'.
func escapePath(path string) string {
	return (&url.URL{Path: path}).EscapedPath()
}

// Open opens the log in an already migrated database and starts the writer.
func Open(ctx context.Context, opts Options) (_ *Store, err error) {
	if pool := opts.PostgresReadPool; pool != nil {
		defer func() {
			if err != nil {
				pool.Close() // taken over, even by a failed Open
			}
		}()
		if opts.DSN == "" {
			return nil, errors.New("eventlog: open: Options.PostgresReadPool needs Options.DSN")
		}
	}
	if opts.Path == "" && opts.DSN == "" {
		return nil, errors.New("eventlog: open: Options.Path or Options.DSN is required")
	}
	if opts.DSN != "" && !IsPostgresDSN(opts.DSN) {
		return nil, fmt.Errorf("eventlog: open: DSN must start with postgres:// or postgresql://")
	}
	if opts.WithoutTree && (!opts.InMemory || opts.DSN != "") {
		return nil, errors.New("eventlog: open: WithoutTree is for InMemory stores only")
	}
	if opts.BlobThreshold == 0 {
		opts.BlobThreshold = DefaultBlobThreshold
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	if opts.ReadConns <= 0 {
		opts.ReadConns = DefaultReadConns
	}
	if opts.ReadMmapBytes == 0 {
		opts.ReadMmapBytes = DefaultReadMmapBytes
	}
	switch strings.ToUpper(opts.Synchronous) {
	case "":
		opts.Synchronous = "FULL"
	case "FULL", "NORMAL", "OFF":
		opts.Synchronous = strings.ToUpper(opts.Synchronous)
	default:
		return nil, fmt.Errorf("eventlog: open: Synchronous %q: want FULL, NORMAL or OFF", opts.Synchronous)
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = DefaultBusyTimeout
	}
	d := newDialect(opts)
	roundTrips := new(atomic.Int64)
	wdb, rdb, err := d.open(ctx, opts, roundTrips)
	if err != nil {
		return nil, err
	}
	var kdb *sql.DB
	if opts.Sealer != nil {
		if kdb, err = d.openKeys(opts); err != nil {
			wdb.Close()
			rdb.Close()
			return nil, err
		}
		kdb.SetMaxOpenConns(keyConns)
		kdb.SetMaxIdleConns(keyConns)
	}
	s := &Store{
		opts:     opts,
		d:        d,
		wdb:      wdb,
		rdb:      rdb,
		kdb:      kdb,
		q:        stmtcache.New(rdb),
		reqs:     make(chan *request, 4096),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		notifyCh: make(chan struct{}),

		severalReads: make(chan struct{}, 1),
		roundTrips:   roundTrips,
	}
	if err := s.w.init(ctx, s); err != nil {
		s.w.closeStmts()
		s.closePools()
		return nil, err
	}
	if s.w.lateTree() {
		if err := s.startTree(ctx); err != nil {
			s.w.closeStmts()
			s.closePools()
			return nil, err
		}
	}
	go s.loop()
	return s, nil
}

// Close stops the writer after the commit in progress and closes the
// database. Appends waiting to be written fail with ErrClosed.
func (s *Store) Close() error {
	var err error
	s.closed.Do(func() {
		close(s.stop)
		<-s.done
		var terr error
		if s.tree != nil {
			terr = s.tree.close()
		}
		s.d.stopListening()
		s.w.closeStmts()
		err = errors.Join(terr, s.closePools())
	})
	return err
}

// closePools closes the store's connection pools.
func (s *Store) closePools() error {
	err := errors.Join(s.wdb.Close(), s.rdb.Close())
	if s.kdb != nil {
		err = errors.Join(err, s.kdb.Close())
	}
	return err
}

// Stats counts the writer's work since Open.
type Stats struct {
	Commits  int64 // group commits (transactions)
	Requests int64 // Append calls they served
	Events   int64 // events committed
	// RoundTrips counts, on PostgreSQL, the round trips of the writer's
	// connections: each time it sent something and then read the answer
	// (a pipeline of statements is one). Zero on SQLite.
	RoundTrips int64
	// Redone counts the batches rolled back and written again: a cache
	// another process made stale, or a projector's queued statement that
	// failed (PostgreSQL).
	Redone int64
	// Late counts the commits sequenced at their end, whose chain lock
	// the server took in their last pipeline (sequencer.go), Missed the
	// transactions begun so that found
	// another process's commit and were done again the usual way
	// (PostgreSQL).
	Late, Missed int64
	// TreeRoundTrips counts, on PostgreSQL, the round trips of the tree
	// builder's connection (it builds the Merkle tree after the commits).
	TreeRoundTrips int64
}

// Stats returns the writer's counters: Requests/Commits is the mean group
// commit size, RoundTrips/Commits what a commit costs in waits on the
// server.
func (s *Store) Stats() Stats {
	return Stats{Commits: s.commits.Load(), Requests: s.requests.Load(), Events: s.evs.Load(), RoundTrips: s.roundTrips.Load(),
		Redone: s.redone.Load(),
		Late:   s.late.Load(), Missed: s.missed.Load(), TreeRoundTrips: s.treeRoundTrips()}
}

func (s *Store) treeRoundTrips() int64 {
	if s.tree == nil {
		return 0
	}
	return s.tree.roundTrips.Load()
}

// DB returns the read-only connection pool, for read models to query.
// Write queries with ? placeholders and pass them through DB().Rebind:
// PostgreSQL's are $1, $2, ….
func (s *Store) DB() *sqlx.DB { return s.rdb }

// rebind turns a query's ? placeholders into the backend's.
func (s *Store) rebind(q string) string { return s.d.rebind(q) }

// Target is where the store's database is: its SQLite file's path, or,
// for PostgreSQL, its DSN (a secret: never print it).
func (s *Store) Target() string { return s.d.target() }

// Snapshot begins a read-only transaction that sees one consistent state
// of the database for its whole life, on either backend (PostgreSQL
// needs REPEATABLE READ for that; SQLite's read transactions are
// snapshots already). Roll it back when done.
func (s *Store) Snapshot(ctx context.Context) (*sqlx.Tx, error) {
	return s.rdb.BeginTxx(ctx, s.d.snapshotOptions())
}

// SeveralReads runs fn as the one caller at a time that holds need of the
// read pool's connections at once (projections.Check holds a snapshot
// and reads the log beside it). Such readers that each held one
// connection and waited for another could take the whole pool and wait
// for each other for ever; taking turns, the one at work waits at most
// for the single-statement readers to give theirs back. It fails with
// ErrFewReadConns when the pool has fewer than need connections, and
// with ctx's error when its turn does not come in time.
func (s *Store) SeveralReads(ctx context.Context, need int, fn func(context.Context) error) error {
	if s.opts.ReadConns < need {
		return fmt.Errorf("%w: this reader holds %d at once, and the store's read pool has %d (eventlog.Options.ReadConns)", ErrFewReadConns, need, s.opts.ReadConns)
	}
	select {
	case s.severalReads <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.severalReads }()
	return fn(ctx)
}

// Notify returns a channel that is closed at the next commit. Call it again
// after each wake-up: every commit closes the channel and makes a new one,
// so a slow reader never blocks the writer.
func (s *Store) Notify() <-chan struct{} {
	s.d.startListening(s)
	s.notifyMu.Lock()
	defer s.notifyMu.Unlock()
	return s.notifyCh
}

func (s *Store) broadcast() {
	s.notifyMu.Lock()
	close(s.notifyCh)
	s.notifyCh = make(chan struct{})
	s.notifyMu.Unlock()
}
