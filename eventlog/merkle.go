package eventlog

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/gorath/rath/events"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/tlog"
)

// The Merkle log (docs/ARCHITECTURE.md, "The Merkle log"). Every event is
// a leaf of an RFC 6962 tree in seq order; the leaf hashes one line of
// JSON, the event's leaf line, as SHA-256(0x00 || line):
//
//	{"at":A,"leaf":1,"payload":"HEX","run":"R"|null,"seq":N,"stream":"S","type":"T","type_version":V,"version":W}
//
// with the keys in that order, no white space, strings escaped as
// encoding/json does without HTML escaping, and payload the hex
// SHA-256(salt || payload) of the event's payload as appended (Event.Payload:
// whole, not the compact row or a blob pointer) under the event's 16-byte
// random salt. The payload's blobs are committed to through the hashes the
// payload names. An event written before the Merkle log has the leaf
// line {"chain":"HEX","leaf":0,"seq":N}: its hash-chain record, which
// commits to its row and every row before it.

// SaltSize is the length of an event's payload salt.
const SaltSize = 16

// PayloadCommitment returns the commitment to a payload that an event's
// leaf line holds: SHA-256(salt || payload). The salt is random per event,
// so a payload deleted together with its salt cannot be guessed back from
// its commitment.
func PayloadCommitment(salt, payload []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write(salt)
	h.Write(payload)
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// LeafLine returns the leaf line of an event written in the Merkle format,
// given its salt: exactly the bytes its leaf hashes (tlog.RecordHash(line)
// is the leaf hash). Store.LeafLine returns the line of any stored event.
func LeafLine(ev events.Event, salt []byte) []byte {
	return appendLeafLine(nil, leafHeaderOf(ev), PayloadCommitment(salt, ev.Payload))
}

// leafHeader is what a leaf line says about an event besides its payload.
type leafHeader struct {
	seq         int64
	stream      string
	version     int64
	typ         string
	typeVersion int
	runID       string // "" with hasRun false is no run (NULL)
	hasRun      bool
	at          int64 // Unix nanoseconds, the at column
}

func leafHeaderOf(ev events.Event) leafHeader {
	return leafHeader{seq: ev.Seq, stream: ev.Stream, version: ev.Version, typ: ev.Type, typeVersion: ev.TypeVersion,
		runID: ev.RunID, hasRun: ev.RunID != "", at: ev.At.UnixNano()}
}

func (r row) leafHeader() leafHeader {
	return leafHeader{seq: r.Seq, stream: r.Stream, version: r.Version, typ: r.Type, typeVersion: r.TypeVersion,
		runID: r.RunID.String, hasRun: r.RunID.Valid, at: r.At}
}

// appendLeafLine appends the leaf line of a Merkle-format event to dst.
func appendLeafLine(dst []byte, h leafHeader, commit [sha256.Size]byte) []byte {
	dst = appendLeafPrefix(dst, h, commit)
	dst = strconv.AppendInt(dst, h.seq, 10)
	return appendLeafSuffix(dst, h)
}

// appendLeafPrefix appends the part of the leaf line before the seq, and
// appendLeafSuffix the part after it: PostgreSQL's appends send the two,
// and the server computes the leaf hash once it numbered the row
// (sequencer.go).
func appendLeafPrefix(dst []byte, h leafHeader, commit [sha256.Size]byte) []byte {
	dst = append(dst, `{"at":`...)
	dst = strconv.AppendInt(dst, h.at, 10)
	dst = append(dst, `,"leaf":1,"payload":"`...)
	dst = hex.AppendEncode(dst, commit[:])
	dst = append(dst, `","run":`...)
	if h.hasRun {
		dst = appendJSONString(dst, h.runID)
	} else {
		dst = append(dst, "null"...)
	}
	return append(dst, `,"seq":`...)
}

func appendLeafSuffix(dst []byte, h leafHeader) []byte {
	dst = append(dst, `,"stream":`...)
	dst = appendJSONString(dst, h.stream)
	dst = append(dst, `,"type":`...)
	dst = appendJSONString(dst, h.typ)
	dst = append(dst, `,"type_version":`...)
	dst = strconv.AppendInt(dst, int64(h.typeVersion), 10)
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendInt(dst, h.version, 10)
	return append(dst, '}')
}

// leafHashAt is the leaf hash of the line prefix, seq, suffix.
func leafHashAt(prefix []byte, seq int64, suffix []byte) tlog.Hash {
	line := make([]byte, 0, len(prefix)+20+len(suffix))
	line = append(line, prefix...)
	line = strconv.AppendInt(line, seq, 10)
	return tlog.RecordHash(append(line, suffix...))
}

// chainLeafLine is the leaf line of an event of the hash chain.
func chainLeafLine(seq int64, chainHash string) []byte {
	dst := append([]byte(nil), `{"chain":`...)
	dst = appendJSONString(dst, chainHash)
	dst = append(dst, `,"leaf":0,"seq":`...)
	dst = strconv.AppendInt(dst, seq, 10)
	return append(dst, '}')
}

// appendJSONString appends s as Canonical encodes a string: printable
// ASCII without quotes or backslashes as is, anything else through
// encoding/json, so the line is the same whoever computes it.
func appendJSONString(dst []byte, s string) []byte {
	plain := utf8.ValidString(s)
	for i := 0; plain && i < len(s); i++ {
		c := s[i]
		plain = c >= 0x20 && c < 0x7f && c != '"' && c != '\\'
	}
	if plain {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	b, err := events.Canonical(s)
	if err != nil {
		panic(err) // a string always encodes
	}
	return append(dst, b...)
}

// TreeHead is the Merkle tree of the log at a size: its number of leaves
// (the events through seq Size) and its root. Kept elsewhere, it lets
// Verify prove the log still extends it, which catches truncation and a
// rewritten history.
type TreeHead struct {
	Size int64     `json:"size"`
	Root tlog.Hash `json:"root"` // base64 in JSON
}

// String formats the head as SIZE:ROOT, the root in base64.
func (h TreeHead) String() string { return strconv.FormatInt(h.Size, 10) + ":" + h.Root.String() }

// ParseTreeHead parses "SIZE:ROOT" (ROOT in base64, as String writes it).
func ParseTreeHead(s string) (TreeHead, error) {
	sizeText, root, ok := strings.Cut(strings.TrimSpace(s), ":")
	var h TreeHead
	if !ok {
		return h, invalid("tree head %q: want SIZE:ROOT", s)
	}
	n, err := strconv.ParseInt(sizeText, 10, 64)
	if err != nil || n <= 0 {
		return h, invalid("tree head %q: size must be a positive integer", s)
	}
	r, err := tlog.ParseHash(root)
	if err != nil {
		return h, invalid("tree head %q: root: %v", s, err)
	}
	return TreeHead{Size: n, Root: r}, nil
}

// maxHashesPerRead bounds the ids of one tree_hashes lookup.
const maxHashesPerRead = 256

// readTreeHashes reads the tree hashes at stored indexes, in that order.
// The leaf hash of an event in the Merkle format is its row's hash column
// and is not repeated in tree_hashes; every other tree hash is there, in
// the row that holds it (treerows.go).
func readTreeHashes(ctx context.Context, q queryer, d dialect, meta storeMeta, indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	var tree, seqs []int64
	for _, id := range indexes {
		if level, n := tlog.SplitStoredHashIndex(id); level == 0 && meta.merkleFormat(n+1) {
			seqs = append(seqs, n+1)
		} else {
			tree = append(tree, id)
		}
	}
	got := make(map[int64][]byte, len(indexes))
	rows, err := readTreeRows(ctx, q, d, tree)
	if err != nil {
		return nil, err
	}
	for _, id := range tree {
		if h, ok := lookupTreeHash(meta, rows, id); ok {
			got[id] = h
		}
	}
	leaves := make(map[int64][]byte, len(seqs))
	if err := readByKey(ctx, q, d, `SELECT seq, hash FROM events WHERE seq IN (`, seqs, leaves); err != nil {
		return nil, err
	}
	for seq, h := range leaves {
		if b, err := hex.DecodeString(hashText(string(h))); err == nil {
			got[tlog.StoredHashIndex(0, seq-1)] = b
		}
	}
	for i, id := range indexes {
		h, ok := got[id]
		if !ok || len(h) != tlog.HashSize {
			return nil, &TreeError{Index: id, Reason: "missing or not a hash"}
		}
		copy(out[i][:], h)
	}
	return out, nil
}

// inList completes query, which ends in "IN (", with a placeholder per
// key in the store's dialect, and returns it with the keys as arguments.
func inList(query string, d dialect, keys []int64) (string, []any) {
	var b strings.Builder
	b.WriteString(query)
	args := make([]any, len(keys))
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('?')
		args[i] = k
	}
	b.WriteByte(')')
	return d.rebind(b.String()), args
}

// readByKey runs query (ending in "IN (") for keys, a page at a time, and
// puts each row's second column under its first.
func readByKey(ctx context.Context, q queryer, d dialect, query string, keys []int64, into map[int64][]byte) error {
	for start := 0; start < len(keys); start += maxHashesPerRead {
		part := keys[start:min(start+maxHashesPerRead, len(keys))]
		text, args := inList(query, d, part)
		rows, err := q.QueryContext(ctx, text, args...)
		if err != nil {
			return storageErr("read tree hashes", err)
		}
		for rows.Next() {
			var k int64
			var h []byte
			if err := rows.Scan(&k, &h); err != nil {
				rows.Close()
				return storageErr("read tree hashes", err)
			}
			into[k] = h
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return storageErr("read tree hashes", err)
		}
	}
	return nil
}

// ErrTree is matched by a *TreeError.
var ErrTree = errors.New("eventlog: the Merkle tree is incomplete or damaged")

// TreeError reports a stored tree hash that is missing or malformed: the
// tree was damaged, or a proof was asked of a size the tree has not
// reached. Verify says which seq it concerns.
type TreeError struct {
	Index  int64 // the stored-hash index (tlog.StoredHashIndex)
	Reason string
}

func (e *TreeError) Error() string {
	level, n := tlog.SplitStoredHashIndex(e.Index)
	return fmt.Sprintf("eventlog: tree hash %d (level %d, node %d): %s", e.Index, level, n, e.Reason)
}

// Is makes errors.Is(err, ErrTree) true.
func (e *TreeError) Is(target error) bool { return target == ErrTree }

// parseMerkleHead parses store_meta's merkle_head: the head and its MAC
// ("" when unkeyed). An empty value is the empty tree.
func parseMerkleHead(v string) (TreeHead, string, error) {
	if v == "" {
		return TreeHead{}, "", nil
	}
	text, mac, _ := strings.Cut(v, " ")
	h, err := ParseTreeHead(text)
	if err != nil {
		return TreeHead{}, "", fmt.Errorf("eventlog: store_meta %s is %q: it was altered", metaMerkleHead, v)
	}
	return h, mac, nil
}

// rootOf folds the complete subtrees of a tree of n leaves (front, by
// stored index) into its root.
func rootOf(n int64, front map[int64]tlog.Hash) tlog.Hash {
	idx := frontier(n)
	r := front[idx[0]]
	for _, id := range idx[1:] {
		r = tlog.NodeHash(front[id], r)
	}
	return r
}

// frontier returns the stored indexes of the complete subtrees of a tree
// of n leaves: every hash a later leaf's StoredHashes can read.
func frontier(n int64) []int64 {
	var out []int64
	for level := 0; n>>level > 0; level++ {
		if (n>>level)&1 == 1 {
			out = append(out, tlog.StoredHashIndex(level, n>>level-1))
		}
	}
	return out
}

// treeReader reads tree hashes through q, for tlog.
type treeReader struct {
	ctx  context.Context
	q    queryer
	d    dialect
	meta storeMeta
}

func (r treeReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	return readTreeHashes(r.ctx, r.q, r.d, r.meta, indexes)
}

// TreeHead returns the log's Merkle tree head: its size (the last seq)
// and root, as the writer recorded them with its last commit (on
// PostgreSQL, once SyncTree built the tree up to the log's end).
func (s *Store) TreeHead(ctx context.Context) (TreeHead, error) {
	if err := s.SyncTree(ctx); err != nil {
		return TreeHead{}, err
	}
	meta, err := readMeta(ctx, s.rdb)
	if err != nil {
		return TreeHead{}, err
	}
	h, _, err := parseMerkleHead(meta.merkleHead)
	return h, err
}

// TreeHeadAt returns the head the tree had at size leaves (the events
// through seq size), recomputed from O(log n) stored hashes: the head to
// check a consistency proof from, or an earlier head a checkpoint names.
func (s *Store) TreeHeadAt(ctx context.Context, size int64) (TreeHead, error) {
	if size < 1 {
		return TreeHead{}, invalid("tree head at size %d: want a positive size", size)
	}
	if err := s.SyncTree(ctx); err != nil {
		return TreeHead{}, err
	}
	tx, err := s.Snapshot(ctx)
	if err != nil {
		return TreeHead{}, fmt.Errorf("eventlog: tree head: %w", err)
	}
	defer tx.Rollback()
	meta, err := s.checkTreeSize(ctx, tx, size)
	if err != nil {
		return TreeHead{}, err
	}
	root, err := tlog.TreeHash(size, treeReader{ctx, tx, s.d, meta})
	if err != nil {
		return TreeHead{}, fmt.Errorf("eventlog: tree head: %w", err)
	}
	return TreeHead{Size: size, Root: root}, nil
}

// ProveInclusion returns the proof that the leaf of the event at seq is in
// the tree of size leaves (RFC 6962's audit path, as tlog.RecordProof):
// check it with tlog.CheckRecord(proof, size, root, seq-1, leafHash).
func (s *Store) ProveInclusion(ctx context.Context, seq, size int64) (tlog.RecordProof, error) {
	if seq < 1 || seq > size {
		return nil, invalid("inclusion proof: seq %d is not in a tree of size %d", seq, size)
	}
	if err := s.SyncTree(ctx); err != nil {
		return nil, err
	}
	tx, err := s.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("eventlog: inclusion proof: %w", err)
	}
	defer tx.Rollback()
	meta, err := s.checkTreeSize(ctx, tx, size)
	if err != nil {
		return nil, err
	}
	p, err := tlog.ProveRecord(size, seq-1, treeReader{ctx, tx, s.d, meta})
	if err != nil {
		return nil, fmt.Errorf("eventlog: inclusion proof: %w", err)
	}
	return p, nil
}

// ProveConsistency returns the proof that the tree of newSize leaves
// extends the tree of oldSize leaves (as tlog.TreeProof): check it with
// tlog.CheckTree(proof, newSize, newRoot, oldSize, oldRoot).
func (s *Store) ProveConsistency(ctx context.Context, oldSize, newSize int64) (tlog.TreeProof, error) {
	if oldSize < 1 || oldSize > newSize {
		return nil, invalid("consistency proof: sizes %d and %d: want 1 <= old <= new", oldSize, newSize)
	}
	if err := s.SyncTree(ctx); err != nil {
		return nil, err
	}
	tx, err := s.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("eventlog: consistency proof: %w", err)
	}
	defer tx.Rollback()
	meta, err := s.checkTreeSize(ctx, tx, newSize)
	if err != nil {
		return nil, err
	}
	p, err := tlog.ProveTree(newSize, oldSize, treeReader{ctx, tx, s.d, meta})
	if err != nil {
		return nil, fmt.Errorf("eventlog: consistency proof: %w", err)
	}
	return p, nil
}

// checkTreeSize refuses a size past the stored tree, and returns the
// store's metadata.
func (s *Store) checkTreeSize(ctx context.Context, q queryer, size int64) (storeMeta, error) {
	meta, err := readMeta(ctx, q)
	if err != nil {
		return meta, err
	}
	h, _, err := parseMerkleHead(meta.merkleHead)
	if err != nil {
		return meta, err
	}
	if size > h.Size {
		return meta, invalid("the tree has %d leaves, not %d", h.Size, size)
	}
	return meta, nil
}

// LeafLine returns the leaf line of the stored event at seq: exactly the
// bytes its leaf hashes.
func (s *Store) LeafLine(ctx context.Context, seq int64) ([]byte, error) {
	tx, err := s.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("eventlog: leaf line: %w", err)
	}
	defer tx.Rollback()
	meta, err := readMeta(ctx, tx)
	if err != nil {
		return nil, err
	}
	rs, err := scanLeafRows(ctx, tx, s.d, seq-1, seq, 1)
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 || rs[0].Seq != seq {
		return nil, invalid("leaf line: no event at seq %d", seq)
	}
	line, fail, err := s.rowLeafLine(ctx, tx, meta, rs[0])
	if err != nil {
		return nil, err
	}
	if fail != "" {
		return nil, fmt.Errorf("eventlog: leaf line of seq %d: %s", seq, fail)
	}
	return line, nil
}

// leafRow is an event row with its salt.
type leafRow struct {
	row
	Salt []byte
}

const selectLeafRows = `SELECT seq, stream, version, type, type_version, run_id, payload, at, hash, salt FROM events`

// scanLeafRows reads up to limit rows with after < seq <= to, in seq order.
func scanLeafRows(ctx context.Context, q queryer, d dialect, after, to int64, limit int) ([]leafRow, error) {
	rs, err := q.QueryContext(ctx, d.rebind(selectLeafRows+` WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?`), after, to, limit)
	if err != nil {
		return nil, storageErr("read events", err)
	}
	defer rs.Close()
	var out []leafRow
	for rs.Next() {
		var r leafRow
		if err := rs.Scan(&r.Seq, &r.Stream, &r.Version, &r.Type, &r.TypeVersion, &r.RunID, &r.Payload, &r.At, &r.Hash, &r.Salt); err != nil {
			return nil, storageErr("read events", err)
		}
		r.Hash = hashText(r.Hash)
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, storageErr("read events", err)
	}
	return out, nil
}

// merkleFormat reports whether the event at seq is written in the Merkle
// format (else it is of the hash chain).
func (m storeMeta) merkleFormat(seq int64) bool { return m.merkleFrom > 0 && seq >= m.merkleFrom }

// rowLeafLine computes a stored row's leaf line. fail, when set, says why
// the row cannot have one (its salt or its payload's blob is missing): a
// verification failure, not an I/O error.
func (s *Store) rowLeafLine(ctx context.Context, q queryer, meta storeMeta, r leafRow) (line []byte, fail string, err error) {
	if !meta.merkleFormat(r.Seq) {
		return chainLeafLine(r.Seq, r.Hash), "", nil
	}
	if isRedacted(r.Payload) && r.Salt == nil {
		commit, fail, err := redactedCommitment(ctx, q, s.d, r.Seq)
		if fail != "" || err != nil {
			return nil, fail, err
		}
		return appendLeafLine(nil, r.leafHeader(), commit), "", nil
	}
	if len(r.Salt) != SaltSize {
		return nil, "its payload salt is missing or malformed: the row was altered", nil
	}
	payload, fail, err := s.fullPayload(ctx, q, r.row)
	if fail != "" || err != nil {
		return nil, fail, err
	}
	return appendLeafLine(nil, r.leafHeader(), PayloadCommitment(r.Salt, payload)), "", nil
}

// fullPayload returns a row's payload as appended: expanded from the
// compact row and read from blobs when the row stores a pointer.
func (s *Store) fullPayload(ctx context.Context, q queryer, r row) ([]byte, string, error) {
	stored := []byte(r.Payload)
	ref, inBlob, err := StoredInBlob(stored)
	if err != nil {
		return nil, err.Error(), nil
	}
	if !inBlob {
		return events.ExpandStored(r.Stream, r.Type, stored), "", nil
	}
	var b []byte
	err = q.QueryRowContext(ctx, s.rebind(`SELECT bytes FROM blobs WHERE hash = ?`), ref).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Sprintf("payload blob %s is missing", ref), nil
	}
	if err != nil {
		return nil, "", storageErr("read payload blob", err)
	}
	if BlobHash(b) != ref {
		return nil, fmt.Sprintf("payload blob %s does not match its hash", ref), nil
	}
	return b, "", nil
}
