package eventlog

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/gorath/rath/events"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

// maxHeadCache bounds the cached stream heads; the cache is cleared when
// it grows past this.
const maxHeadCache = 1 << 16

// writerState is owned by the writer goroutine (and by Open before the
// goroutine starts); nothing else touches it.
type writerState struct {
	s    *Store
	conn *sql.Conn
	// tx is the open write transaction when it was begun through
	// database/sql, on conn (nil between transactions). Statements run
	// through conn's prepared statements, which share conn's session and
	// so run inside it; tx is what commits, rolls back, and is handed to
	// AppendTx's functions. On PostgreSQL a batch without AppendTx work
	// sends its BEGIN in the lock's pipeline instead and its COMMIT in the
	// flush's (pipelinedtx.go): inTx is set while either kind is open,
	// and txEnded once the flush's pipeline ended it.
	tx      *sql.Tx
	inTx    bool
	txEnded bool
	// inBatch is set while a group commit applies its requests, which
	// queue what Tx.ExecPipelined is given; queueOff runs those statements
	// at once instead (the redo of a batch one of them failed). pipelined
	// holds their queued texts (pipelined.go).
	inBatch, queueOff bool
	pipelined         map[pipelinedKey]string
	// savepoints is set while a batch is redone with a savepoint around
	// each request, where nothing is queued: a queued statement that
	// failed at the request's RELEASE would fail the request with the
	// server's error instead of its projector's.
	savepoints bool
	// absorbed are the appends the last run took off the queue once it
	// held the chain lock (absorb); commit adds them to its batch.
	absorbed    []*request
	gate        *writeGate // SQLite files only: bounds the writers' wait for the lock (gatedbegin.go)
	stmts       map[string]*sql.Stmt
	hasher      *chainHasher
	lastSeq     int64
	lastHash    string
	heads       map[string]int64
	dataVersion int64

	// From store_meta, read with the tail.
	fingerprint string // the chain's key fingerprint, "" if not recorded yet
	v2From      int64  // first seq hashed with hashFormat2, 0 if not recorded yet
	merkleFrom  int64  // first seq in the Merkle format, 0 if not recorded yet

	// The Merkle tree (merkle.go). treeSize leaves are in tree_hashes as
	// last read or committed; leaves are those of seqs treeSize+1 to
	// lastSeq, written in the open transaction (or read back to catch the
	// tree up) and not yet stored. front holds the hashes of the tree's
	// complete subtrees, all a new leaf's stored hashes read (nil: not
	// loaded); nextFront is front after the open transaction commits.
	treeSize  int64
	leaves    []tlog.Hash
	front     map[int64]tlog.Hash
	nextFront map[int64]tlog.Hash
	line      []byte // leaf line buffer
	// nextHead is the tree head the open transaction's flushTree
	// recorded, for Options.AfterCommit (zero: none).
	nextHead TreeHead
	// leasesConfirmed are the lease tokens the open transaction queued
	// leaseConfirm for (leasecache.go); begin clears them.
	leasesConfirmed map[leaseKey]bool
	// keys are the sealing keys found in subject_keys (sealcheck.go).
	keys confirmedKeys
	// keyErr is set when the store's key does not match the chain's; every
	// write fails with it.
	keyErr error
	// metaWritten is set while the open transaction holds store_meta rows
	// written by begin: a rollback must make the next begin re-read them.
	metaWritten bool
	// pend holds the open batch's rows on PostgreSQL until the flush
	// (pgbatch.go); notified is set once the flush sent the NOTIFY.
	pend     pgPending
	notified bool
	// leases caches run_leases tokens (run → token) that checkLease read
	// while this writer held the chain lock: only the writer of the chain
	// writes run_leases (projecting run.leased), so a run's token goes
	// when a run.leased of that run is written here or seen written by
	// another process (leasecache.go), and all of them on a reload or
	// when a transaction or a request was rolled back.
	leases map[string]int64

	// held is a request absorb took off the queue that must run alone
	// (AppendTx, Exclusive): the loop runs it next. mayTake is set while
	// the loop holds no request of its own, so absorb may take one.
	held    *request
	mayTake bool

	// opt is the state of transactions sequenced at their end
	// (sequencer.go); batchStart the caches as they were before the open
	// batch, for a missed one to put back. origin is the seq the open
	// transaction's rows are numbered after: its first seq minus one, or
	// in a late transaction seqPlaceholder.
	opt        lateState
	batchStart undo
	origin     int64

	// pid is the server process of conn (PostgreSQL); lost is set when
	// the open batch's COMMIT was sent and its answer lost, and resolving
	// while the batch is written again after the outcome was learned
	// (resolve.go).
	pid       uint32
	lost      *lostCommit
	resolving bool
}

func (w *writerState) init(ctx context.Context, s *Store) error {
	w.s = s
	w.stmts = map[string]*sql.Stmt{}
	w.hasher = newChainHasher(s.opts.HMACKey)
	if err := s.d.initWriter(ctx, w); err != nil {
		return err
	}
	if err := w.reload(ctx, false); err != nil {
		return err
	}
	return w.buildTree()
}

// buildTree builds the Merkle tree over the events that are not in it
// yet, when a log written before the Merkle log is first opened (the
// events become the tree's first leaves; see catchUpTree). A store opened
// with the wrong key writes nothing: its appends fail with the key error.
func (w *writerState) buildTree() error {
	if w.s.opts.chainRows || w.lastSeq <= w.treeSize {
		return nil
	}
	if w.lateTree() {
		return nil // the builder's, once the store is open (startTree)
	}
	ctx := context.Background()
	if err := w.begin(ctx, true, nil); err != nil {
		if errors.Is(err, ErrKey) {
			return nil
		}
		return err
	}
	err := w.flushTree(ctx, false)
	if err == nil {
		err = w.commitTx()
	}
	if err != nil {
		w.rollback()
		w.forceReload()
		return fmt.Errorf("eventlog: build the Merkle tree: %w", err)
	}
	w.committed()
	w.treeCommitted()
	return nil
}

// connect takes the writer's connection from its pool, if it has none.
func (w *writerState) connect(ctx context.Context) error {
	if w.conn != nil {
		return nil
	}
	conn, err := w.s.wdb.Conn(ctx)
	if err != nil {
		return w.s.d.connectErr(err)
	}
	w.conn = conn
	w.s.d.connected(w)
	return nil
}

// disconnect drops the writer's connection after a failure that may have
// broken it, where the dialect's connections can break (the next write
// dials again and re-reads the chain tail).
func (w *writerState) disconnect() { w.s.d.disconnect(w) }

func (w *writerState) closeStmts() {
	for _, st := range w.stmts {
		st.Close()
	}
	w.gate.close()
	if w.conn != nil {
		w.conn.Close()
		w.conn = nil
	}
}

// reload reads the chain tail and the store's metadata and forgets cached
// stream heads; needed when another connection may have written. inTx says
// the caller holds a transaction already (begin's, which holds the write
// lock); otherwise reload reads in a read transaction of its own, so the
// tail and the metadata come from one snapshot.
//
// data_version is read first, before the snapshot: if another connection
// commits after it, the version read is older than the data, and the next
// begin sees a change and reloads again. Read the other way round, such a
// commit would leave the version current and the tail stale, and every
// later insert would collide on its seq.
func (w *writerState) reload(ctx context.Context, inTx bool) error {
	w.heads = map[string]int64{}
	w.keys.fresh = false
	clear(w.leases)
	dv, err := w.s.d.dataVersion(ctx, w.conn)
	if err != nil {
		return err
	}
	if h := w.s.opts.afterVersionRead; h != nil {
		h()
	}
	if !inTx {
		if _, err := w.conn.ExecContext(ctx, w.s.d.beginRead()); err != nil {
			return storageErr("begin read", err)
		}
		defer w.conn.ExecContext(context.Background(), `ROLLBACK`)
	}
	err = w.conn.QueryRowContext(ctx, `SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1`).Scan(&w.lastSeq, &w.lastHash)
	if errors.Is(err, sql.ErrNoRows) {
		w.lastSeq, w.lastHash = 0, ""
		err = nil
	}
	w.lastHash = hashText(w.lastHash)
	if err != nil {
		return storageErr("read chain tail", err)
	}
	meta, err := readMeta(ctx, w.conn)
	if err != nil {
		return err
	}
	w.fingerprint, w.v2From, w.merkleFrom = meta.fingerprint, meta.v2From, meta.merkleFrom
	w.leaves, w.front, w.nextFront = nil, nil, nil
	if w.s.opts.chainRows {
		w.treeSize = w.lastSeq
	} else {
		h, _, err := parseMerkleHead(meta.merkleHead)
		if err != nil {
			return err
		}
		w.treeSize = h.Size
	}
	w.keyErr = nil
	if w.lastSeq > 0 {
		if w.keyErr, err = checkKey(ctx, w.conn, w.s.opts.HMACKey, meta); err != nil {
			return err
		}
	}
	w.dataVersion = dv
	return nil
}

func (w *writerState) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := w.stmts[query]; ok {
		return st, nil
	}
	st, err := w.conn.PrepareContext(ctx, w.s.rebind(query))
	if err != nil {
		return nil, fmt.Errorf("eventlog: prepare: %w", err)
	}
	w.stmts[query] = st
	return st, nil
}

// queryRow reads one row in the open transaction through a prepared
// statement, or after the statements queued before it, in their round
// trip, when there are any (a failed one is errQueuedFailed).
func (w *writerState) queryRow(ctx context.Context, query string, args []any, dest ...any) error {
	if w.pend.unsent() > 0 {
		return w.queryRowAfterQueued(ctx, query, args, dest...)
	}
	st, err := w.stmt(ctx, query)
	if err != nil {
		return err
	}
	return st.QueryRowContext(ctx, args...).Scan(dest...)
}

func (w *writerState) exec(ctx context.Context, query string, args ...any) error {
	if w.pend.unsent() > 0 {
		// After the projectors' queued statements, in their round trip.
		_, err := w.execAfterQueued(ctx, query, args...)
		return err
	}
	st, err := w.stmt(ctx, query)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(ctx, args...)
	return err
}

func (w *writerState) rollback() {
	// The writer's lifetime context: rollback must run even if the request
	// context is done.
	if w.conn == nil || !w.inTx {
		return
	}
	switch {
	case w.tx != nil:
		w.tx.Rollback()
	case !w.txEnded && !w.lateUnsent():
		w.conn.ExecContext(context.Background(), `ROLLBACK`)
	}
	if w.opt.open {
		// Its caches hold placeholders; the redo takes the lock first.
		w.forceReload()
		w.opt.forceEarly = true
	}
	w.tx, w.inTx, w.txEnded, w.opt.open = nil, false, false, false
	clear(w.leases)
	w.pend.reset()
	w.notified = false
	if w.metaWritten {
		w.forceReload()
	}
}

// committed is called after a successful COMMIT.
func (w *writerState) committed() {
	w.metaWritten = false
	w.opt.lastCommit, w.opt.forceEarly = time.Now(), false
}

func (w *writerState) head(ctx context.Context, stream string) (int64, error) {
	if v, ok := w.heads[stream]; ok {
		return v, nil
	}
	return w.readHead(ctx, stream)
}

// readHead reads stream's head from the server and caches it. In a
// transaction sequenced at its end it may run before the lock: a head
// another process moves after it makes the batch's insert collide, and
// the batch is redone.
func (w *writerState) readHead(ctx context.Context, stream string) (int64, error) {
	var v int64
	st, err := w.stmt(ctx, `SELECT COALESCE(MAX(version), 0) FROM events WHERE stream = ?`)
	if err != nil {
		return 0, err
	}
	if err := st.QueryRowContext(ctx, stream).Scan(&v); err != nil {
		return 0, storageErr("stream head", err)
	}
	if len(w.heads) >= maxHeadCache {
		w.heads = map[string]int64{}
	}
	w.heads[stream] = v
	return v, nil
}

const (
	insertEvent    = `INSERT INTO events (seq, stream, version, type, type_version, run_id, payload, at, hash, salt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	insertChainRow = `INSERT INTO events (seq, stream, version, type, type_version, run_id, payload, at, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
)

// apply writes one request. wrote reports whether it may have written
// anything before failing.
func (w *writerState) apply(ctx context.Context, req *request, u *undo) (evs []events.Event, wrote bool, err error) {
	// Check every expected version first, so a conflict writes nothing.
	heads := make([]int64, len(req.writes))
	for i, pw := range req.writes {
		if len(pw.items) == 0 {
			continue
		}
		for j := range i {
			if req.writes[j].stream == pw.stream && len(req.writes[j].items) > 0 {
				return nil, false, invalid("append: stream %q named twice in one atomic write", pw.stream)
			}
		}
		head, err := w.head(ctx, pw.stream)
		if err != nil {
			// Where a failed statement aborts the transaction, report
			// it as written so the batch is redone with savepoints.
			return nil, w.s.d.abortsOnError(), err
		}
		if pw.expected != AnyVersion && pw.expected != head && w.opt.open {
			// Decided on the cache, which another process's append may
			// have made stale: the refusal stands only on the server's
			// head.
			if head, err = w.readHead(ctx, pw.stream); err != nil {
				return nil, w.s.d.abortsOnError(), err
			}
		}
		if pw.expected != AnyVersion && pw.expected != head {
			return nil, false, &ConflictError{Stream: pw.stream, Expected: pw.expected, Actual: head}
		}
		heads[i] = head
	}
	if err := w.checkLease(ctx, req); err != nil {
		return nil, w.s.d.abortsOnError(), err
	}
	if err := w.checkKeys(ctx, req); err != nil {
		return nil, w.s.d.abortsOnError(), err
	}
	out := make([]events.Event, 0, req.n)
	tx := &Tx{ctx: ctx, w: w}
	for i, pw := range req.writes {
		for bi, b := range pw.blobs {
			if w.s.opts.DiscardBlobs {
				break
			}
			wrote = true
			// A sealed blob is stored under its plaintext's address,
			// which the payloads name, and its subject's key id (seal.go).
			var hash string
			if pw.sealedBlobs != nil {
				hash, b = pw.blobKeys[bi], pw.sealedBlobs[bi]
			} else {
				hash = BlobHash(b)
			}
			if err := w.putBlob(ctx, hash, b); err != nil {
				return nil, wrote, err
			}
		}
		if len(pw.items) == 0 {
			continue
		}
		head := heads[i]
		if _, seen := u.heads[pw.stream]; !seen {
			u.heads[pw.stream] = head
		}
		for _, it := range pw.items {
			head++
			seq := w.lastSeq + 1
			at := w.s.opts.Clock().UTC()
			stored := it.stored()
			wrote = true
			if t := w.s.opts.BlobThreshold; t > 0 && len(stored) > t {
				if err := w.putBlob(ctx, BlobHash(stored), stored); err != nil {
					return nil, wrote, err
				}
				stored = blobRef(stored)
			} else if !w.s.legacyRows {
				stored = events.CompactPayload(pw.stream, it.typ, stored)
			}
			var runID any
			if req.runID != "" {
				runID = req.runID
			}
			var hash string
			var leaf tlog.Hash
			var err error
			if w.s.opts.chainRows {
				hash = w.hasher.eventHash(w.hashFormat(seq), w.lastHash, seq, pw.stream, head, it.typ, it.version, req.runID, req.runID != "", stored, at.UnixNano())
				err = w.exec(ctx, insertChainRow, seq, pw.stream, head, it.typ, it.version, runID, string(stored), at.UnixNano(), w.storedHash(hash))
			} else {
				var salt [SaltSize]byte
				rand.Read(salt[:])
				h := leafHeader{seq: seq, stream: pw.stream, version: head, typ: it.typ, typeVersion: it.version, runID: req.runID, hasRun: req.runID != "", at: at.UnixNano()}
				// The leaf commits to the payload as stored: sealed, it is
				// the ciphertext, so verify needs no key.
				commitment := PayloadCommitment(salt[:], it.stored())
				if w.batched() {
					// The server numbers the row and hashes its line
					// (sequencer.go); a late transaction's seq is a
					// placeholder, and its hash is known after the commit.
					prefix := appendLeafPrefix(nil, h, commitment)
					suffix := appendLeafSuffix(nil, h)
					if !w.opt.open {
						leaf = leafHashAt(prefix, seq, suffix)
						hash = hex.EncodeToString(leaf[:])
					}
					w.pend.addEvent(seq-w.origin, pw.stream, head, it.typ, it.version, req.runID, stored, at.UnixNano(), salt[:], prefix, suffix)
				} else {
					w.line = appendLeafLine(w.line[:0], h, commitment)
					leaf = tlog.RecordHash(w.line)
					hash = hex.EncodeToString(leaf[:])
					err = w.exec(ctx, insertEvent, seq, pw.stream, head, it.typ, it.version, runID, string(stored), at.UnixNano(), w.storedHash(hash), salt[:])
				}
			}
			if err != nil {
				if uniqueViolation(err) {
					// seq or (stream, version) is taken: our cache is stale.
					return nil, wrote, fmt.Errorf("%w: insert %s seq %s: %w", errStaleTail, it.typ, seqName(seq), err)
				}
				return nil, wrote, storageErr(fmt.Sprintf("insert %s seq %s", it.typ, seqName(seq)), err)
			}
			if it.typ == events.TypeRunLeased {
				w.forgetLease(it.payload) // the projection changes run_leases
			}
			ev := events.Event{Seq: seq, Stream: pw.stream, Version: head, Type: it.typ, TypeVersion: it.version,
				RunID: req.runID, Payload: it.payload, At: at, Hash: hash}
			tx.sealing.seq, tx.sealing.key = seq, nil
			if it.sealed != nil {
				tx.sealing.key = pw.key
			}
			for _, p := range w.s.opts.Projectors {
				if err := p.Project(ctx, tx, &ev, it.p); err != nil {
					return nil, wrote, fmt.Errorf("project %s seq %s: %w", it.typ, seqName(seq), err)
				}
			}
			w.lastSeq, w.lastHash = seq, hash
			if !w.s.opts.chainRows && !w.lateTree() {
				w.leaves = append(w.leaves, leaf)
			}
			out = append(out, ev)
		}
		w.heads[pw.stream] = head
	}
	for _, p := range w.s.opts.Projectors {
		if rp, ok := p.(RequestProjector); ok {
			if err := rp.EndRequest(ctx, tx); err != nil {
				return nil, wrote, fmt.Errorf("project: %w", err)
			}
		}
	}
	if req.txFn != nil {
		wrote = true
		if err := w.sendQueued(ctx); err != nil {
			return nil, wrote, err
		}
		// The request's rows may not be in the tables yet (a PostgreSQL
		// batch sends them at its end): the function learns them here.
		// It may erase a key (rath's Erase does): a request after it in
		// this transaction reads the keys again.
		w.keys.known, w.keys.fresh = false, false
		if err := req.txFn(contextWithAppended(ctx, out), w.tx); err != nil {
			return nil, wrote, err
		}
	}
	return out, wrote, nil
}

func (w *writerState) putBlob(ctx context.Context, hash string, b []byte) error {
	if w.batched() {
		w.pend.addBlob(hash, b)
		return nil
	}
	if err := w.exec(ctx, `INSERT INTO blobs (hash, size, bytes) VALUES (?, ?, ?) ON CONFLICT (hash) DO NOTHING`, hash, len(b), b); err != nil {
		return storageErr("put blob", err)
	}
	return nil
}

func (w *writerState) exclusive(req *request) {
	ctx := req.ctx
	var res result
	if err := w.begin(context.Background(), false, nil); err != nil {
		res.err = err
	} else if err := req.fn(ctx, &Tx{ctx: ctx, w: w}); err != nil {
		w.rollback()
		res.err = err
	} else if err := w.commitTx(); err != nil {
		w.rollback()
		res.err = storageErr("commit", err)
	} else {
		w.committed()
	}
	// fn may have changed anything; start from the database again. A
	// failure that dropped the PostgreSQL connection (disconnect) has
	// forced a reload already: the next begin dials and re-reads.
	if w.conn == nil {
		w.forceReload()
	} else if err := w.reload(context.Background(), false); err != nil && res.err == nil {
		res.err = err
	}
	req.reply <- res
	w.s.broadcast()
}

// hashFormat is the hash input format of the event at seq.
func (w *writerState) hashFormat(seq int64) int {
	if w.v2From > 0 && seq >= w.v2From {
		return hashFormat2
	}
	return hashFormat1
}

// blobRef is the stored stand-in for a payload kept in blobs.
func blobRef(payload []byte) []byte {
	return []byte(`{"$blob":"` + BlobHash(payload) + `","size":` + strconv.Itoa(len(payload)) + `}`)
}

// stopUntilContinued stops the process (SIGSTOP) and returns only after
// SIGCONT. A stop sent to oneself lands when the kernel next schedules
// the threads, not when kill returns: without the wait, the next
// statement could run before the stop, and the fault would not be the
// one the hook promises.
func stopUntilContinued() {
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	defer signal.Stop(cont)
	syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	<-cont
}
