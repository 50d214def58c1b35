package eventlog

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"github.com/gorath/rath/events"
	"slices"

	"github.com/jackc/pgx/v5"
	"golang.org/x/mod/sumdb/tlog"
)

// Catching up with other processes' appends on PostgreSQL. When another
// process committed since this writer's last transaction, the writer used
// to forget its caches and re-read them (the tail, store_meta, each
// stream's head as it came up, the tree's edge, the leases): several round
// trips a commit at W > 1. Instead, the statement that takes the chain
// lock is pipelined with a read of the rows appended since the cached
// tail and of the tree head; the writer folds those rows into its caches
// (stream heads, the tree's edge, which are the rows' own leaf hashes) and
// checks the result against the stored head. Anything unexpected (too
// many rows, a gap, a row not in the Merkle format, a tree that does not
// match) falls back to the full reload.

// maxCatchUp is the most rows folded in; more means a full reload.
const maxCatchUp = 256

// caughtUp is what the pipeline read: the tail, the rows after the cached
// tail (up to maxCatchUp+1) and the stored tree head.
type caughtUp struct {
	// counter is the chain's counter (chain_lock.seq), which the lock's
	// statement read: it is the tail's seq in a consistent store.
	counter int64
	seq     int64
	hash    string
	rows    []catchUpRow
	head    string
	// The heads of the streams and the lease tokens of the runs the
	// pipeline was asked for (prefetch), read under the lock.
	heads  map[string]int64
	tokens map[string]int64
}

// prefetch names what the batch about to be written will look up and the
// writer has not cached: its streams' heads and its runs' lease tokens.
// Read in the lock's pipeline, under the lock, they cost no round trip of
// their own, where each was one when the batch came to it.
type prefetch struct {
	streams []string
	runs    []string
}

// prefetchFor lists what batch will look up that the caches lack.
func (w *writerState) prefetchFor(batch []*request) prefetch {
	// The lists hold only what is not cached, a few names: a scan of
	// them costs less than maps made on every commit.
	var p prefetch
	for _, req := range batch {
		for _, pw := range req.writes {
			if _, ok := w.heads[pw.stream]; !ok && len(pw.items) > 0 && !slices.Contains(p.streams, pw.stream) {
				p.streams = append(p.streams, pw.stream)
			}
		}
		if l := req.lease; l != nil {
			if _, ok := w.leases[l.Run]; !ok && !slices.Contains(p.runs, l.Run) {
				p.runs = append(p.runs, l.Run)
			}
		}
	}
	return p
}

// queue adds p's reads to the pipeline b.
func (p prefetch) queue(b *pgx.Batch) {
	if len(p.streams) > 0 {
		// One index probe a stream (max of the stream's key range), as
		// head reads it; a GROUP BY over ANY would read every row of them.
		b.Queue(`SELECT s, (SELECT COALESCE(MAX(version), 0) FROM events WHERE stream = s) FROM unnest($1::text[]) AS s`, p.streams)
	}
	if len(p.runs) > 0 {
		// One index probe a run too: the writer's generic plan of
		// run = ANY($1) reads the whole table while it is small or not
		// analyzed yet, and keeps doing so as it grows.
		b.Queue(`SELECT r, t FROM (SELECT r, (SELECT token FROM run_leases WHERE run = r) AS t FROM unnest($1::text[]) AS r) AS x WHERE t IS NOT NULL`, p.runs)
	}
}

// read reads the answers to queue's reads: a stream without rows has
// head 0; a run without a lease row is left out (checkLease asks again).
func (p prefetch) read(br pgx.BatchResults, c *caughtUp) error {
	readPairs := func(into map[string]int64) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			var v int64
			if err := rows.Scan(&k, &v); err != nil {
				return err
			}
			into[k] = v
		}
		return rows.Err()
	}
	if len(p.streams) > 0 {
		c.heads = make(map[string]int64, len(p.streams))
		for _, s := range p.streams {
			c.heads[s] = 0
		}
		if err := readPairs(c.heads); err != nil {
			return err
		}
	}
	if len(p.runs) > 0 {
		c.tokens = make(map[string]int64, len(p.runs))
		if err := readPairs(c.tokens); err != nil {
			return err
		}
	}
	return nil
}

// usePrefetched puts what the pipeline prefetched into the caches, after
// any catch-up or reload: read under the lock, it is current.
func (w *writerState) usePrefetched(c caughtUp) {
	if len(c.heads) > 0 {
		if len(w.heads)+len(c.heads) >= maxHeadCache {
			w.heads = map[string]int64{}
		}
		for s, v := range c.heads {
			w.heads[s] = v
		}
	}
	if len(c.tokens) > 0 {
		if w.leases == nil || len(w.leases)+len(c.tokens) >= maxHeadCache {
			w.leases = map[string]int64{}
		}
		for r, t := range c.tokens {
			w.leases[r] = t
		}
	}
}

type catchUpRow struct {
	seq, version int64
	stream, typ  string
	hash         string
	leased       []byte // a run.leased row's payload, to tell whose token it changed
}

// lockAndCatchUp takes the chain lock and reads, in one round trip, the
// chain's tail and, when after ≥ 0, the rows after seq after and the tree
// head. PostgreSQL runs each statement of the pipeline after the one
// before returned, with a snapshot of its own (read committed), so the
// reads see every commit made before the lock was granted, as when they
// were sent one after the other.
// With begin the pipeline opens the transaction too (a BEGIN in a
// pipeline starts a transaction block that outlasts it); its failure is
// beginErr, and nothing else was run.
func lockAndCatchUp(ctx context.Context, conn *sql.Conn, begin bool, after int64, pf prefetch) (c caughtUp, beginErr, lockErr, readErr error) {
	err := withPgx(conn, func(pc *pgx.Conn) error {
		b := &pgx.Batch{}
		if begin {
			b.Queue(`BEGIN`)
		}
		b.Queue(lockStatement)
		b.Queue(`SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1`)
		if after >= 0 {
			b.Queue(`SELECT seq, stream, version, type, hash, CASE WHEN type = '`+events.TypeRunLeased+`' THEN payload END FROM events WHERE seq > $1 ORDER BY seq LIMIT $2`, after, maxCatchUp+1)
			b.Queue(`SELECT value FROM store_meta WHERE key = $1`, metaMerkleHead)
		}
		pf.queue(b)
		br := pc.SendBatch(ctx, b)
		defer func() {
			if err := br.Close(); err != nil && beginErr == nil && lockErr == nil && readErr == nil {
				readErr = err
			}
		}()
		if begin {
			if _, beginErr = br.Exec(); beginErr != nil {
				return nil
			}
		}
		var setting string
		if lockErr = br.QueryRow().Scan(&c.counter, &setting); lockErr != nil {
			return nil
		}
		if readErr = br.QueryRow().Scan(&c.seq, &c.hash); errors.Is(readErr, pgx.ErrNoRows) {
			readErr = nil
		}
		if readErr != nil {
			return nil
		}
		if after < 0 {
			readErr = pf.read(br, &c)
			return nil
		}
		rows, err := br.Query()
		if err != nil {
			readErr = err
			return nil
		}
		for rows.Next() {
			var r catchUpRow
			if err := rows.Scan(&r.seq, &r.stream, &r.version, &r.typ, &r.hash, &r.leased); err != nil {
				rows.Close()
				readErr = err
				return nil
			}
			c.rows = append(c.rows, r)
		}
		rows.Close()
		if readErr = rows.Err(); readErr != nil {
			return nil
		}
		if readErr = br.QueryRow().Scan(&c.head); errors.Is(readErr, pgx.ErrNoRows) {
			readErr = nil
		}
		if readErr == nil {
			readErr = pf.read(br, &c)
		}
		return nil
	})
	if err != nil && beginErr == nil && lockErr == nil {
		lockErr = err
	}
	return c, beginErr, lockErr, readErr
}

// catchUp folds what lockAndCatchUp read into the caches, and reports
// whether it could; if not, the caller reloads them.
func (w *writerState) catchUp(c caughtUp) bool {
	if len(c.rows) == 0 || len(c.rows) > maxCatchUp || len(w.leaves) > 0 || w.s.opts.chainRows ||
		!w.lateTree() && w.treeSize != w.lastSeq || w.keyErr != nil || w.merkleFrom <= 0 || w.v2From <= 0 || w.fingerprint == "" {
		return false
	}
	last := c.rows[len(c.rows)-1]
	if last.seq != c.seq || hashText(last.hash) != hashText(c.hash) {
		return false
	}
	meta := storeMeta{merkleFrom: w.merkleFrom}
	leaves := make([]tlog.Hash, len(c.rows))
	for i, r := range c.rows {
		if r.seq != w.lastSeq+int64(i)+1 || !meta.merkleFormat(r.seq) {
			return false
		}
		b, err := hex.DecodeString(hashText(r.hash))
		if err != nil || len(b) != len(tlog.Hash{}) {
			return false
		}
		copy(leaves[i][:], b)
	}
	head, _, err := parseMerkleHead(c.head)
	switch {
	case w.lateTree():
		// The tree is built after the commits, by its own lock.
	case err != nil || head.Size != last.seq:
		return false
	case w.front != nil:
		front, err := extendFront(w.treeSize, w.front, leaves)
		if err != nil || rootOf(head.Size, front) != head.Root {
			return false
		}
		w.front = front
	}
	if len(w.heads)+len(c.rows) >= maxHeadCache {
		w.heads = map[string]int64{}
	}
	for _, r := range c.rows {
		w.heads[r.stream] = r.version
		if r.typ == events.TypeRunLeased {
			w.forgetLease(r.leased)
		}
	}
	if !w.lateTree() {
		w.treeSize = head.Size
	}
	w.lastSeq, w.lastHash = last.seq, hashText(last.hash)
	return true
}

// extendFront returns the edge of the tree of size+len(leaves) leaves
// given the edge of the tree of size leaves.
func extendFront(size int64, front map[int64]tlog.Hash, leaves []tlog.Hash) (map[int64]tlog.Hash, error) {
	made := make(map[int64]tlog.Hash, 2*len(leaves))
	read := tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(indexes))
		for i, id := range indexes {
			h, ok := made[id]
			if !ok {
				if h, ok = front[id]; !ok {
					return nil, &TreeError{Index: id, Reason: "not on the tree's edge"}
				}
			}
			out[i] = h
		}
		return out, nil
	})
	for i, leaf := range leaves {
		n := size + int64(i)
		hs, err := tlog.StoredHashesForRecordHash(n, leaf, read)
		if err != nil {
			return nil, err
		}
		id := tlog.StoredHashIndex(0, n)
		for k, h := range hs {
			made[id+int64(k)] = h
		}
	}
	next := make(map[int64]tlog.Hash)
	for _, id := range frontier(size + int64(len(leaves))) {
		h, ok := made[id]
		if !ok {
			h = front[id]
		}
		next[id] = h
	}
	return next, nil
}

// prefetchAbsorbed reads, in one round trip, the stream heads and lease
// tokens that the appends absorb took in (absorb.go) will look up and the
// writer has not cached. The lock's pipeline read only those of the batch
// it was sent for; without this, each absorbed append on a new stream or
// an uncached run paid a round trip of its own while the chain lock was
// held, which every other process's writer waited out. Where nothing of
// the transaction has been sent (sequenced at its end, sequencer.go) they
// are read without the lock, as the batch's own were.
func (w *writerState) prefetchAbsorbed(ctx context.Context, absorbed []*request) error {
	if !w.batched() || !w.inTx || w.pend.unsent() > 0 {
		return nil
	}
	return w.prefetch(ctx, w.prefetchFor(absorbed))
}

// prefetch reads what pf names in one round trip and caches it.
func (w *writerState) prefetch(ctx context.Context, pf prefetch) error {
	if len(pf.streams) == 0 && len(pf.runs) == 0 {
		return nil
	}
	var c caughtUp
	err := withPgx(w.conn, func(conn *pgx.Conn) error {
		b := &pgx.Batch{}
		pf.queue(b)
		br := conn.SendBatch(ctx, b)
		err := pf.read(br, &c)
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err != nil {
		return storageErr("read the absorbed appends' heads", err)
	}
	w.usePrefetched(c)
	return nil
}
