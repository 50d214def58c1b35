package eventlog

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"golang.org/x/mod/sumdb/tlog"
)

// The Merkle tree on PostgreSQL is built after the commit, outside the
// append's transaction: its rows, its head and the head's MAC derive
// from the leaf hashes, which are final once the events are committed,
// so building them needs no lock an append waits for. A process extends
// the tree after its commits under an advisory lock of its own, taken
// with a try: if another process is building, this one does not wait,
// and the builder looks at the log's end again after it let the lock go,
// so a commit made while it built is built by it or by its committer.
// A process killed between its commit and its build leaves the tree
// behind the log until the next build, by any process.
//
// Everything that reads the tree (TreeHead, TreeHeadAt, the proofs, and
// through them checkpoints, witnesses and bundles) first brings it up to
// the log's end (SyncTree); Verify reports the events not yet in it.
// SQLite builds the tree inline, in the append's transaction.

// treeBuildLock is the advisory lock key of the tree's builder ("rath"
// "tree").
const treeBuildLock int64 = 0x7261746874726565

// lateTree reports whether the writer leaves the tree to the builder
// (PostgreSQL, in the Merkle format).
func (w *writerState) lateTree() bool { return w.batched() }

// storeTreeRows writes tree_hashes rows and moves the head from old to
// head, in one statement; a head another builder moved changes nothing
// and fails the statement (a division by the count of heads moved).
// pgDivisionByZero is the error storeTreeRows fails with when the head
// moved.
const pgDivisionByZero = "22012"

// errTreeMoved is a build that found the head moved by another builder
// when it wrote: it is done again, until the busy timeout.
var errTreeMoved = errors.New("eventlog: another builder moved the tree head")

const storeTreeRows = `WITH t AS (
	INSERT INTO tree_hashes (id, hash) SELECT * FROM unnest($1::bigint[], $2::bytea[])
), m AS (
	UPDATE store_meta SET value = $4::text WHERE key = $3::text AND value = $5::text RETURNING 1
), n AS (
	INSERT INTO store_meta (key, value) SELECT $3::text, $4::text WHERE $5::text = '' ON CONFLICT (key) DO NOTHING RETURNING 1
)
SELECT 1 / ((SELECT count(*) FROM m) + (SELECT count(*) FROM n))::int`

// treeBuilder builds the tree of a PostgreSQL store on a connection of
// its own, on its goroutine: the writer pokes it after each commit, and
// SyncTree asks it to build and waits. Its state is its goroutine's.
type treeBuilder struct {
	s      *Store
	db     *sql.DB // its one connection's pool
	conn   *sql.Conn
	hasher *chainHasher
	// size and front are the tree as it last built or read it (front
	// nil: not known); merkleFrom the first seq in the Merkle format, 0
	// if not read yet.
	size       int64
	front      map[int64]tlog.Hash
	merkleFrom int64

	poke  chan struct{}
	syncs chan *request
	quit  chan struct{}
	done  chan struct{}
	// runsFinished counts the run.finished events committed since the
	// last head told to Options.AfterCommit.
	runsFinished atomic.Int64
	roundTrips   atomic.Int64
	// idleUntil is when the builder, having found another process
	// building, next tries after a commit (treeStandBy).
	idleUntil time.Time
	// keyErr is the writer's at Open: a store whose key is not the
	// chain's builds nothing (its MAC would be a wrong one).
	keyErr error
}

func newTreeBuilder(s *Store) (*treeBuilder, error) {
	b := &treeBuilder{s: s, hasher: newChainHasher(s.opts.HMACKey),
		poke: make(chan struct{}, 1), syncs: make(chan *request), quit: make(chan struct{}), done: make(chan struct{})}
	cfg, err := writerConfig(s.opts, AppTree, &b.roundTrips)
	if err != nil {
		return nil, err
	}
	b.db = stdlib.OpenDB(*cfg)
	b.db.SetMaxOpenConns(1)
	b.db.SetMaxIdleConns(1)
	return b, nil
}

// startTree starts the store's tree builder, once it built the tree up
// to the log's end (a log written before the Merkle log gets its tree
// here, as on SQLite at Open), unless it leaves the tree to others
// (Options.LeaveTree).
func (s *Store) startTree(ctx context.Context) error {
	b, err := newTreeBuilder(s)
	if err != nil {
		return err
	}
	b.keyErr = s.w.keyErr
	if b.keyErr == nil && !b.leaves() {
		if _, err := b.build(ctx, true); err != nil {
			b.disconnect()
			b.db.Close()
			return fmt.Errorf("eventlog: build the Merkle tree: %w", err)
		}
	}
	s.tree = b
	go b.loop()
	return nil
}

// loop builds when poked or asked, until quit; then it builds once more,
// so a store closed after its appends leaves their tree built. A builder
// that leaves the tree to others builds only when asked.
func (b *treeBuilder) loop() {
	defer close(b.done)
	ctx := context.Background()
	sync := func(req *request) {
		h, err := b.build(req.ctx, true)
		b.report(h, err)
		req.reply <- result{err: err}
	}
	for {
		select {
		case <-b.poke:
			if b.leaves() {
				continue
			}
			// A build after every commit cost two round trips and the
			// server's work of a commit each: the commits of a short
			// while are built together, unless a reader asks first.
			wait := max(treeCoalesce, time.Until(b.idleUntil))
			select {
			case <-time.After(wait):
			case req := <-b.syncs:
				sync(req)
				continue
			case <-b.quit:
				b.report(b.build(ctx, false))
				return
			}
			b.report(b.build(ctx, false))
		case req := <-b.syncs:
			sync(req)
		case <-b.quit:
			if !b.leaves() {
				b.report(b.build(ctx, false))
			}
			return
		}
	}
}

// leaves reports whether the builder leaves the tree over this process's
// commits to other processes (Options.LeaveTree), building only when a
// reader here asks.
func (b *treeBuilder) leaves() bool { return b.s.opts.LeaveTree && b.s.opts.AfterCommit == nil }

// treeStandBy is how long a builder that found another process building,
// or having built since its own last build, waits before it tries again
// after a commit.
const treeStandBy = 100 * time.Millisecond

// treeCoalesce is how long the builder waits after a commit before it
// builds, so that the commits made meanwhile (this process's and others')
// are built together. Readers of the tree do not wait for it (SyncTree).
const treeCoalesce = 20 * time.Millisecond

// report tells Options.AfterCommit of a head built.
func (b *treeBuilder) report(h TreeHead, err error) {
	if err != nil || h.Size == 0 || b.s.opts.AfterCommit == nil {
		return
	}
	b.s.opts.AfterCommit(Commit{Head: h, RunsFinished: int(b.runsFinished.Swap(0))})
}

// close stops the builder after a last build and closes its connection.
func (b *treeBuilder) close() error {
	close(b.quit)
	<-b.done
	b.disconnect()
	return b.db.Close()
}

// poked asks for a build after a commit, without waiting.
func (b *treeBuilder) poked(runsFinished int) {
	b.runsFinished.Add(int64(runsFinished))
	select {
	case b.poke <- struct{}{}:
	default:
	}
}

func (b *treeBuilder) connect(ctx context.Context) error {
	if b.conn != nil {
		return nil
	}
	conn, err := b.db.Conn(ctx)
	if err != nil {
		return b.s.d.connectErr(err)
	}
	b.conn, b.front, b.merkleFrom = conn, nil, 0
	return nil
}

// disconnect drops the connection, and with it any advisory lock it held.
func (b *treeBuilder) disconnect() {
	if b.conn != nil {
		discardConn(b.conn)
		b.conn = nil
	}
}

// build extends the stored tree to the log's end. With wait it waits for
// another process's build, up to the busy timeout; without, it leaves
// the tree to that process. It returns the head it stored (zero if
// none).
func (b *treeBuilder) build(ctx context.Context, wait bool) (TreeHead, error) {
	if b.keyErr != nil {
		return TreeHead{}, b.keyErr
	}
	deadline := time.Now().Add(b.s.opts.BusyTimeout)
	var built TreeHead
	for {
		if err := b.connect(ctx); err != nil {
			return built, err
		}
		got, stored, end, pre, err := b.tryLock(ctx)
		if err != nil {
			b.disconnect()
			return built, err
		}
		head, _, err := parseMerkleHead(stored)
		if err != nil {
			b.disconnect() // lets the lock go
			return built, err
		}
		if !got {
			if !wait {
				// Another process builds, and builds what this one
				// committed before its end (it looks again after it let
				// the lock go): this one waits longer before its next
				// try, so that one process builds while the others
				// commit.
				b.idleUntil = time.Now().Add(treeStandBy)
			}
			if !wait || head.Size >= end {
				return built, nil
			}
			if time.Now().After(deadline) {
				return built, storageErr("build the Merkle tree", fmt.Errorf("%w: another process builds it since %s", ErrBusy, b.s.opts.BusyTimeout))
			}
			select {
			case <-ctx.Done():
				return built, ctx.Err()
			case <-time.After(2 * time.Millisecond):
			}
			continue
		}
		// Another process built since this one last did: this one's
		// rows read ahead (pre) were partly built already and its edge
		// of the tree must be read again. It stands by, as when it finds
		// the lock taken, so that the processes sharing the log take
		// turns at building rather than each building the others'
		// commits a few at a time.
		if !wait && head.Size != b.size && b.size > 0 {
			b.idleUntil = time.Now().Add(treeStandBy)
		}
		h, more, err := b.extendLocked(ctx, head, stored, end, pre)
		if errors.Is(err, errTreeMoved) && time.Now().Before(deadline) {
			// The other builder's commit is done by now (the write
			// waited for it); the next try reads its head.
			continue
		}
		if err != nil {
			b.disconnect() // lets the lock go; the next build starts over
			return built, err
		}
		if h.Size > built.Size {
			built = h
		}
		// A build after a commit stops at the end it read: the commits
		// made meanwhile poked this builder again or are their own
		// process's to build. A reader waiting for the tree builds on.
		if !more || !wait {
			return built, nil
		}
	}
}

// leafHash is an event's seq and stored hash, as read for its leaf.
type leafHash struct {
	seq  int64
	hash string
}

// tryLock tries the builder's lock and reads the stored head and the
// log's end, in one round trip, with the rows after the tree it last
// built (pre): those a build usually needs.
func (b *treeBuilder) tryLock(ctx context.Context) (got bool, head string, end int64, pre []leafHash, err error) {
	err = withPgx(b.conn, func(c *pgx.Conn) error {
		bt := &pgx.Batch{}
		bt.Queue(`SELECT pg_try_advisory_lock($1)`, treeBuildLock)
		bt.Queue(`SELECT COALESCE((SELECT value FROM store_meta WHERE key = $1), ''), COALESCE((SELECT max(seq) FROM events), 0)`, metaMerkleHead)
		bt.Queue(`SELECT seq, hash FROM events WHERE seq > $1 ORDER BY seq LIMIT $2`, b.size, maxCatchUp)
		br := c.SendBatch(ctx, bt)
		if err := br.QueryRow().Scan(&got); err != nil {
			br.Close()
			return err
		}
		if err := br.QueryRow().Scan(&head, &end); err != nil {
			br.Close()
			return err
		}
		rows, err := br.Query()
		if err != nil {
			br.Close()
			return err
		}
		for rows.Next() {
			var r leafHash
			if err := rows.Scan(&r.seq, &r.hash); err != nil {
				rows.Close()
				br.Close()
				return err
			}
			pre = append(pre, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			br.Close()
			return err
		}
		return br.Close()
	})
	if err != nil {
		return false, "", 0, nil, storageErr("lock the Merkle tree", err)
	}
	return got, head, end, pre, nil
}

// extendLocked builds the tree from head (stored as stored) to end,
// holding the builder's lock, and lets the lock go. more reports that
// the log grew past what it built meanwhile.
func (b *treeBuilder) extendLocked(ctx context.Context, head TreeHead, stored string, end int64, pre []leafHash) (built TreeHead, more bool, err error) {
	if head.Size > end {
		return built, false, treeAheadErr(head.Size, end)
	}
	if b.merkleFrom == 0 {
		meta, err := readMeta(ctx, b.conn)
		if err != nil {
			return built, false, err
		}
		b.merkleFrom = meta.merkleFrom
	}
	leaves, err := b.readLeaves(ctx, head.Size, end, pre)
	if err != nil {
		return built, false, err
	}
	grown, next := head, b.front
	if len(leaves) == 0 && head.Size != b.size {
		// Another builder built past this one's tree: the edge this one
		// holds is not the stored head's, and is read again when needed.
		next = nil
	}
	var rowIDs []int64
	var rows [][]byte
	if len(leaves) > 0 {
		if head.Size != b.size || b.front == nil {
			if b.front, err = readFront(ctx, b.conn, b.s.d, b.merkleFrom, head.Size); err != nil {
				return built, false, err
			}
			b.size = head.Size
		}
		if head.Size > 0 && rootOf(head.Size, b.front) != head.Root {
			return built, false, fmt.Errorf("eventlog: build the Merkle tree: the stored head %s does not match its stored hashes; run verify", head)
		}
		meta := storeMeta{merkleFrom: b.merkleFrom}
		if rowIDs, rows, next, grown, err = growTree(meta, head.Size, b.front, leaves); err != nil {
			return built, false, err
		}
	}
	var now int64
	err = withPgx(b.conn, func(c *pgx.Conn) error {
		// A pipeline is one implicit transaction, which commits at its
		// end, after the unlock: the next builder may read the head
		// before it commits. Its write then waits for the head's row
		// and, finding it moved, fails (storeTreeRows) and is done
		// again (conflict).
		bt := &pgx.Batch{}
		stmts := 2
		if len(leaves) > 0 {
			bt.Queue(storeTreeRows, nonNil(rowIDs), nonNil(rows), metaMerkleHead, b.hasher.signedHead(grown), stored)
			stmts++
		}
		bt.Queue(`SELECT pg_advisory_unlock($1)`, treeBuildLock)
		bt.Queue(`SELECT COALESCE(max(seq), 0) FROM events`)
		br := c.SendBatch(ctx, bt)
		for range stmts - 1 {
			if _, err := br.Exec(); err != nil {
				br.Close()
				return err
			}
		}
		if err := br.QueryRow().Scan(&now); err != nil {
			br.Close()
			return err
		}
		return br.Close()
	})
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && (pe.Code == pgDivisionByZero || pe.Code == pgUniqueViolation) {
			// Another builder moved the head first; the failed pipeline
			// skipped the unlock.
			if _, uerr := b.conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, treeBuildLock); uerr == nil {
				b.front = nil
				return built, false, fmt.Errorf("%w: %w", errTreeMoved, err)
			}
		}
		return built, false, storageErr(fmt.Sprintf("store the Merkle tree (%d leaves from %d)", len(leaves), head.Size), err)
	}
	b.size, b.front = grown.Size, next
	if len(leaves) > 0 {
		built = grown
	}
	return built, now > grown.Size, nil
}

// readLeaves reads the leaf hashes of the events after seq after through
// seq end, starting with those of pre: a Merkle-format event's is its
// hash column, an older event's that of its hash-chain record.
func (b *treeBuilder) readLeaves(ctx context.Context, after, end int64, pre []leafHash) ([]tlog.Hash, error) {
	meta := storeMeta{merkleFrom: b.merkleFrom}
	leaves := make([]tlog.Hash, 0, end-after)
	add := func(r leafHash) error {
		if r.seq != after+1 {
			return fmt.Errorf("eventlog: build the Merkle tree: seq %d is missing; run verify", after+1)
		}
		hash := hashText(r.hash)
		var leaf tlog.Hash
		if meta.merkleFormat(r.seq) {
			h, err := hex.DecodeString(hash)
			if err != nil || len(h) != len(leaf) {
				return fmt.Errorf("eventlog: build the Merkle tree: seq %d has no leaf hash; run verify", r.seq)
			}
			copy(leaf[:], h)
		} else {
			leaf = tlog.RecordHash(chainLeafLine(r.seq, hash))
		}
		leaves = append(leaves, leaf)
		after = r.seq
		return nil
	}
	if len(pre) > 0 && pre[0].seq > after+1 {
		pre = nil // read after a tree that is no longer the stored one
	}
	for _, r := range pre {
		if r.seq <= after {
			continue
		}
		if r.seq > end {
			break
		}
		if err := add(r); err != nil {
			return nil, err
		}
	}
	for after < end {
		rows, err := b.conn.QueryContext(ctx, `SELECT seq, hash FROM events WHERE seq > $1 AND seq <= $2 ORDER BY seq LIMIT $3`, after, end, scanPage)
		if err != nil {
			return nil, storageErr("read the leaves", err)
		}
		n := 0
		for rows.Next() {
			var r leafHash
			if err := rows.Scan(&r.seq, &r.hash); err != nil {
				rows.Close()
				return nil, storageErr("read the leaves", err)
			}
			if err := add(r); err != nil {
				rows.Close()
				return nil, err
			}
			n++
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, storageErr("read the leaves", err)
		}
		if n == 0 {
			return nil, fmt.Errorf("eventlog: build the Merkle tree: the log ends at seq %d, before %d; run verify", after, end)
		}
	}
	return leaves, nil
}

// SyncTree brings the Merkle tree up to the log's end as it is when
// called, waiting for another process's build of it up to the busy
// timeout (PostgreSQL, where the tree is built after the commit; a no-op
// on SQLite, whose appends build it). Every reader of the tree in this
// package calls it first.
func (s *Store) SyncTree(ctx context.Context) error {
	if s.tree == nil {
		return nil
	}
	var stored string
	var end int64
	err := s.rdb.QueryRowContext(ctx, `SELECT COALESCE((SELECT value FROM store_meta WHERE key = $1), ''), COALESCE((SELECT max(seq) FROM events), 0)`, metaMerkleHead).Scan(&stored, &end)
	if err != nil {
		return storageErr("read the Merkle tree head", err)
	}
	if head, _, err := parseMerkleHead(stored); err == nil && head.Size >= end {
		return nil
	}
	req := &request{ctx: ctx, reply: make(chan result, 1)}
	select {
	case s.tree.syncs <- req:
	case <-s.tree.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return (<-req.reply).err
}
