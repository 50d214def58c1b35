package eventlog

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// The writer's side of the Merkle tree: a batch's leaves are hashed into
// the tree in memory, their tree hashes inserted as rows of up to
// maxHashesPerRow hashes each (treerows.go), with one multi-row INSERT per
// batch (per maxTreeRows rows), and the new tree head recorded in
// store_meta, just before the commit.

// maxTreeRows is the most rows of one tree_hashes INSERT (two parameters
// each, far below either backend's limit).
const maxTreeRows = 256

// catchUpTree reads back the leaves of events that are in the log but not
// in the tree (a log written before the Merkle log, or copied from one),
// inside the open write transaction, so the next flush stores them with
// the batch's own. It re-reads the tree's size first: another process may
// have built it since this one looked.
func (w *writerState) catchUpTree(ctx context.Context) error {
	if w.lateTree() {
		return nil
	}
	if w.s.opts.chainRows || w.lastSeq <= w.treeSize+int64(len(w.leaves)) {
		if w.treeSize > w.lastSeq {
			return treeAheadErr(w.treeSize, w.lastSeq)
		}
		return nil
	}
	meta, err := readMeta(ctx, w.conn)
	if err != nil {
		return err
	}
	head, _, err := parseMerkleHead(meta.merkleHead)
	if err != nil {
		return err
	}
	n := head.Size
	if n > w.lastSeq {
		return treeAheadErr(n, w.lastSeq)
	}
	if n != w.treeSize {
		w.treeSize, w.leaves, w.front = n, nil, nil
	}
	meta = storeMeta{merkleFrom: w.merkleFrom}
	for after := w.treeSize + int64(len(w.leaves)); after < w.lastSeq; {
		rs, err := scanLeafRows(ctx, w.conn, w.s.d, after, w.lastSeq, scanPage)
		if err != nil {
			return err
		}
		if len(rs) == 0 {
			return fmt.Errorf("eventlog: build the Merkle tree: the log ends at seq %d, its head is %d; run verify", after, w.lastSeq)
		}
		for _, r := range rs {
			if r.Seq != after+1 {
				return fmt.Errorf("eventlog: build the Merkle tree: seq %d is missing; run verify", after+1)
			}
			line, fail, err := w.s.rowLeafLine(ctx, w.conn, meta, r)
			if err != nil {
				return err
			}
			if fail != "" {
				return fmt.Errorf("eventlog: build the Merkle tree: seq %d: %s; run verify", r.Seq, fail)
			}
			w.leaves = append(w.leaves, tlog.RecordHash(line))
			after = r.Seq
		}
	}
	return nil
}

// treeAheadErr says the tree has more leaves than the log has events.
func treeAheadErr(leaves, lastSeq int64) error {
	return fmt.Errorf("eventlog: the Merkle tree has %d leaves but the log ends at seq %d: events were deleted; run verify", leaves, lastSeq)
}

// flushTree stores the tree hashes of the open transaction's leaves, the
// dialect's way (storeTree). On PostgreSQL it also sends the batch's
// pending rows, in the same statement (pgbatch.go), and with commit, in a
// transaction begun in the lock's pipeline, the COMMIT in the same round
// trip (pipelinedtx.go).
func (w *writerState) flushTree(ctx context.Context, commit bool) error {
	if w.s.opts.WithoutTree {
		return nil // treeCommitted still moves past the leaves
	}
	if len(w.leaves) == 0 || w.lateTree() {
		// On PostgreSQL the tree is built after the commit (latetree.go).
		if w.batched() && !w.pend.empty() {
			return w.flushPostgres(ctx, commit)
		}
		return nil
	}
	if w.front == nil {
		front, err := readFront(ctx, w.conn, w.s.d, w.merkleFrom, w.treeSize)
		if err != nil {
			return err
		}
		w.front = front
	}
	meta := storeMeta{merkleFrom: w.merkleFrom}
	rowIDs, rows, next, head, err := growTree(meta, w.treeSize, w.front, w.leaves)
	if err != nil {
		return err
	}
	w.nextFront, w.nextHead = next, head
	return w.s.d.storeTree(ctx, w, rowIDs, rows, w.hasher.signedHead(head), commit)
}

// readFront reads the edge of the stored tree of size leaves.
func readFront(ctx context.Context, q queryer, d dialect, merkleFrom, size int64) (map[int64]tlog.Hash, error) {
	idx := frontier(size)
	hs, err := readTreeHashes(ctx, q, d, storeMeta{merkleFrom: merkleFrom}, idx)
	if err != nil {
		return nil, fmt.Errorf("eventlog: read the Merkle tree's edge: %w", err)
	}
	front := make(map[int64]tlog.Hash, len(idx))
	for i, id := range idx {
		front[id] = hs[i]
	}
	return front, nil
}

// growTree hashes leaves into the tree of size leaves whose edge is
// front: the tree_hashes rows to store (packed), the new tree's edge and
// its head.
func growTree(meta storeMeta, size int64, front map[int64]tlog.Hash, leaves []tlog.Hash) (rowIDs []int64, rows [][]byte, next map[int64]tlog.Hash, head TreeHead, err error) {
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
	var ids []int64 // to store, in order
	for i, leaf := range leaves {
		n := size + int64(i)
		hs, err := tlog.StoredHashesForRecordHash(n, leaf, read)
		if err != nil {
			return nil, nil, nil, TreeHead{}, fmt.Errorf("eventlog: hash the Merkle tree: %w", err)
		}
		id := tlog.StoredHashIndex(0, n)
		for k, h := range hs {
			made[id+int64(k)] = h
			// A Merkle-format event's leaf hash is its hash column.
			if k > 0 || !meta.merkleFormat(n+1) {
				ids = append(ids, id+int64(k))
			}
		}
	}
	end := size + int64(len(leaves))
	next = make(map[int64]tlog.Hash)
	for _, id := range frontier(end) {
		h, ok := made[id]
		if !ok {
			h = front[id]
		}
		next[id] = h
	}
	hashes := make([][]byte, len(ids))
	for i, id := range ids {
		h := made[id]
		hashes[i] = h[:]
	}
	rowIDs, rows = packTreeRows(meta, ids, hashes)
	return rowIDs, rows, next, TreeHead{Size: end, Root: rootOf(end, next)}, nil
}

// signedHead is head as store_meta records it: with its MAC under the
// store's HMAC key, if it has one.
func (h *chainHasher) signedHead(head TreeHead) string {
	s := head.String()
	if mac := h.headMAC(s); mac != "" {
		s += " " + mac
	}
	return s
}

// treeCommitted moves the tree forward after the commit of its hashes.
func (w *writerState) treeCommitted() {
	if len(w.leaves) == 0 {
		return
	}
	w.treeSize += int64(len(w.leaves))
	w.leaves = w.leaves[:0]
	w.front, w.nextFront = w.nextFront, nil
}

// insertTreeRows is the INSERT of n tree hashes (with ? placeholders,
// rebound by the writer's statement cache).
func insertTreeRows(n int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO tree_hashes (id, hash) VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?, ?)")
	}
	return b.String()
}
