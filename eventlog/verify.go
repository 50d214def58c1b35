package eventlog

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/keyring"

	"github.com/jmoiron/sqlx"
	"golang.org/x/mod/sumdb/tlog"
)

// blobReferrers are the event types whose payloads reference blobs.
var blobReferrers = map[string]struct{}{events.TypeProviderCalled: {}, events.TypeProviderFailed: {}, events.TypeToolReturned: {}}

// ErrVerify is matched by a *VerifyError.
var ErrVerify = errors.New("eventlog: verification failed")

// VerifyError names the first event (or blob) that failed verification.
type VerifyError struct {
	Seq    int64  // 0 for a failure not tied to one event
	Blob   string // set when a blob failed: missing, altered, or not what the event says
	Reason string
}

func (e *VerifyError) Error() string {
	switch {
	case e.Seq > 0: // the reason names the blob, if one failed
		return fmt.Sprintf("eventlog: verification failed at seq %d: %s", e.Seq, e.Reason)
	case e.Blob != "":
		return fmt.Sprintf("eventlog: verification failed: blob %s: %s", e.Blob, e.Reason)
	}
	return "eventlog: verification failed: " + e.Reason
}

// Is makes errors.Is(err, ErrVerify) true.
func (e *VerifyError) Is(target error) bool { return target == ErrVerify }

// VerifyOptions configure Verify.
type VerifyOptions struct {
	// Head, if set, is a head recorded elsewhere earlier: the log must still
	// contain that event with that hash. This catches truncation, which the
	// chain alone cannot.
	Head *Head
	// Tree, if set, is a tree head recorded elsewhere earlier: the log's
	// tree at that size must still have that root. This catches
	// truncation and a history rewritten with every hash recomputed.
	Tree *TreeHead
	// Progress, if set, is called after each page with the events checked.
	Progress func(checked int64)
}

// VerifyReport is the result of Verify.
type VerifyReport struct {
	Events  int64        `json:"events"`
	Blobs   int64        `json:"blobs"`
	Head    Head         `json:"head"`
	Tree    TreeHead     `json:"tree"`
	Failure *VerifyError `json:"failure,omitempty"`
	// Redactions are the redacted events, each checked against the
	// evidence.redacted event that names it.
	Redactions []RedactionInfo `json:"redactions,omitempty"`
	// Sealed counts the events whose payload is sealed under a subject's
	// key, SealedBlobs the sealed blobs (package keyring): their leaves
	// cover the ciphertext and were checked all the same.
	Sealed      int64 `json:"sealed,omitempty"`
	SealedBlobs int64 `json:"sealed_blobs,omitempty"`
	// Unopened counts sealed payloads and blobs verify could not open
	// (no key-encryption key, or the subject was erased): the blobs such
	// a payload references, and a sealed blob's address, are unchecked.
	Unopened int64 `json:"unopened,omitempty"`
	// NotInTree counts the events after the recorded tree head: on
	// PostgreSQL the tree is built after the commit, and a verify that
	// could not bring it up to the log's end checks those events' rows
	// but not the tree over them.
	NotInTree int64 `json:"not_in_tree,omitempty"`
}

// OK reports whether everything verified.
func (r *VerifyReport) OK() bool { return r.Failure == nil }

// Verify recomputes every event's leaf from its row (docs/ARCHITECTURE.md,
// "The Merkle log"): its header and its payload's commitment under its
// salt, or for an event written before the Merkle log its hash-chain
// record, recomputing the chain. It checks each row's hash column (the
// leaf hash, or with an HMAC key the keyed tag only a key holder
// computes), recomputes the whole Merkle tree from the leaves and compares
// every stored tree hash with it, and checks that seqs are contiguous,
// that no tree leaf outlives its event, that every blob matches its
// address and that every blob an event references exists: a payload
// stored as a blob, a tool output, file contents, and a model request with
// every message segment its messages_ref chain reaches. With opts.Head
// (opts.Tree) it also checks that the log still holds that head (tree
// head). It reads one consistent snapshot, so appends running meanwhile
// neither fail it nor are half seen; the report's Head and Tree are the
// snapshot's. A verification failure is reported in the report (the first
// bad seq), not as an error; the error is for I/O failures.
func (s *Store) Verify(ctx context.Context, opts VerifyOptions) (*VerifyReport, error) {
	// Best effort: a store that cannot build the tree reports what is
	// not in it (VerifyReport.NotInTree).
	s.SyncTree(ctx)
	tx, err := s.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("eventlog: verify: %w", err)
	}
	defer tx.Rollback()
	v := &verifier{s: s, tx: tx, rep: &VerifyReport{}, have: map[string]bool{}, followed: map[string]bool{}}
	return v.run(ctx, opts)
}

// verifier is one Verify call, reading through tx.
type verifier struct {
	s   *Store
	tx  *sqlx.Tx
	rep *VerifyReport
	// have holds the stored blob hashes; followed the request records and
	// message segments already checked (successive calls share segments).
	have, followed map[string]bool
	// redacted are the redacted seqs seen; records the evidence.redacted
	// events, by seq (nil for one that does not decode).
	redacted []int64
	records  map[int64]*events.EvidenceRedacted
	atOf     map[int64]int64
	meta     storeMeta // as read at the start
	// treeTo is the last seq the recorded tree head covers, where the
	// tree is built after the commit and lags the log (else the log's
	// end); rootAt the recomputed root at that size.
	treeTo int64
	rootAt tlog.Hash
}

func (v *verifier) fail(seq int64, blob, format string, args ...any) (*VerifyReport, error) {
	v.rep.Failure = &VerifyError{Seq: seq, Blob: blob, Reason: fmt.Sprintf(format, args...)}
	return v.rep, nil
}

func (v *verifier) run(ctx context.Context, opts VerifyOptions) (*VerifyReport, error) {
	tx, rep := v.tx, v.rep
	var end Head
	err := tx.QueryRowContext(ctx, `SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1`).Scan(&end.Seq, &end.Hash)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("eventlog: verify: %w", err)
	}
	end.Hash = hashText(end.Hash)
	meta, err := readMeta(ctx, tx)
	if err != nil {
		return nil, err
	}
	v.meta = meta
	v.treeTo = end.Seq
	if stored, _, err := parseMerkleHead(meta.merkleHead); err == nil && v.s.d.batchesRows() && stored.Size < end.Seq {
		v.treeTo = stored.Size
	}
	if meta.v2From < 0 {
		return v.fail(0, "", "store_meta %s is not a seq: it was altered", metaChainV2From)
	}
	if meta.merkleFrom < 0 {
		return v.fail(0, "", "store_meta %s is not a seq: it was altered", metaMerkleFrom)
	}
	if end.Seq > 0 {
		keyErr, err := checkKey(ctx, tx, v.s.opts.HMACKey, meta)
		if err != nil {
			return nil, err
		}
		var ke *KeyError
		if errors.As(keyErr, &ke) {
			return v.fail(1, "", "%s", ke.Reason)
		}
	}
	hrows, err := tx.QueryContext(ctx, `SELECT hash FROM blobs`)
	if err != nil {
		return nil, fmt.Errorf("eventlog: verify blobs: %w", err)
	}
	for hrows.Next() {
		var h string
		if err := hrows.Scan(&h); err != nil {
			hrows.Close()
			return nil, fmt.Errorf("eventlog: verify blobs: %w", err)
		}
		v.have[blobAddress(h)] = true
	}
	hrows.Close()
	if err := hrows.Err(); err != nil {
		return nil, fmt.Errorf("eventlog: verify blobs: %w", err)
	}
	h := newChainHasher(v.s.opts.HMACKey)
	prevHash, prevSeq := "", int64(0)
	chainHash := "" // the last hash of the chain part
	var headFound, treeFound bool
	var tree treeChecker
	for end.Seq > 0 {
		lrs, err := scanLeafRows(ctx, tx, v.s.d, prevSeq, end.Seq, scanPage)
		if err != nil {
			return nil, err
		}
		stored, err := v.storedTree(ctx, prevSeq, lrs)
		if err != nil {
			return nil, err
		}
		for _, lr := range lrs {
			r := lr.row
			if r.Seq != prevSeq+1 {
				return v.fail(prevSeq+1, "", "event missing: seq jumps from %d to %d", prevSeq, r.Seq)
			}
			if meta.merkleFormat(r.Seq) {
				line, fail, err := v.s.rowLeafLine(ctx, tx, meta, lr)
				if err != nil {
					return nil, err
				}
				if fail != "" {
					return v.fail(r.Seq, "", "%s", fail)
				}
				leaf := tlog.RecordHash(line)
				if hex.EncodeToString(leaf[:]) != r.Hash {
					return v.fail(r.Seq, "", "hash mismatch: the row was altered")
				}
				if reason := v.checkLeaf(&tree, r.Seq, leaf, true, stored); reason != "" {
					return v.fail(r.Seq, "", "%s", reason)
				}
				if isRedacted(r.Payload) {
					v.redacted = append(v.redacted, r.Seq)
				} else if done, err := v.checkRefs(ctx, r); done || err != nil {
					return rep, err
				}
				if r.Type == events.TypeEvidenceRedacted {
					if err := v.noteRecord(ctx, r); err != nil {
						return rep, err
					}
				}
				if v.checkHeads(opts, r, &tree, &headFound, &treeFound) {
					return rep, nil
				}
				prevHash, prevSeq = r.Hash, r.Seq
				rep.Events++
				continue
			}
			format := hashFormat1
			if meta.v2From > 0 && r.Seq >= meta.v2From {
				format = hashFormat2
			}
			if format == hashFormat1 && r.RunID.Valid && r.RunID.String == "" {
				// Format 1 hashes '' like NULL, and the writer stores no
				// run as NULL: an empty run_id was written behind its back.
				return v.fail(r.Seq, "", "run_id is empty where the writer stores NULL: the row was altered")
			}
			want := h.eventHash(format, chainHash, r.Seq, r.Stream, r.Version, r.Type, r.TypeVersion, r.RunID.String, r.RunID.Valid, []byte(r.Payload), r.At)
			if want != r.Hash {
				reason := "hash mismatch: the row was altered or the chain was rewritten"
				if r.Seq == 1 {
					reason += " (or the HMAC key differs)"
				}
				return v.fail(r.Seq, "", "%s", reason)
			}
			if reason := v.checkLeaf(&tree, r.Seq, tlog.RecordHash(chainLeafLine(r.Seq, r.Hash)), false, stored); reason != "" {
				return v.fail(r.Seq, "", "%s", reason)
			}
			if done, err := v.checkRefs(ctx, r); done || err != nil {
				return rep, err
			}
			if v.checkHeads(opts, r, &tree, &headFound, &treeFound) {
				return rep, nil
			}
			prevHash, prevSeq, chainHash = r.Hash, r.Seq, r.Hash
			rep.Events++
		}
		if opts.Progress != nil {
			opts.Progress(rep.Events)
		}
		if len(lrs) < scanPage || prevSeq >= end.Seq {
			break
		}
	}
	if prevSeq != end.Seq {
		return v.fail(prevSeq+1, "", "event missing: the log ends at seq %d, its head is %d", prevSeq, end.Seq)
	}
	rep.Head = Head{Seq: prevSeq, Hash: prevHash}
	if prevSeq > 0 {
		rep.Tree = TreeHead{Size: prevSeq, Root: tree.root()}
	}
	if opts.Head != nil && !headFound {
		return v.fail(opts.Head.Seq, "", "the log ends at seq %d, before the recorded head %d: it was truncated", prevSeq, opts.Head.Seq)
	}
	if opts.Tree != nil && !treeFound {
		return v.fail(prevSeq+1, "", "the log ends at seq %d, before the recorded tree head's size %d: it was truncated", prevSeq, opts.Tree.Size)
	}
	treeStop, err := treeEnd(ctx, tx, meta)
	if err != nil {
		return nil, err
	}
	if treeStop < 0 {
		return v.fail(prevSeq, "", "the Merkle tree's last row is malformed: the tree was altered")
	}
	if treeStop > tlog.StoredHashCount(prevSeq) {
		return v.fail(prevSeq+1, "", "event missing: the Merkle tree has leaves past the log's last seq %d, so events were deleted from its tail", prevSeq)
	}
	at := rep.Tree
	if v.treeTo < prevSeq {
		at = TreeHead{Size: v.treeTo, Root: v.rootAt}
		rep.NotInTree = prevSeq - v.treeTo
	}
	if done := v.checkTreeHead(meta, h, v.treeTo, at); done {
		return rep, nil
	}
	if done, err := v.checkRedactions(ctx); done || err != nil {
		return rep, err
	}
	// Every blob must match its content address.
	rows, err := tx.QueryContext(ctx, `SELECT hash, bytes FROM blobs ORDER BY hash`)
	if err != nil {
		return nil, fmt.Errorf("eventlog: verify blobs: %w", err)
	}
	defer rows.Close()
	var sealed []string
	for rows.Next() {
		var hash string
		var b []byte
		if err := rows.Scan(&hash, &b); err != nil {
			return nil, fmt.Errorf("eventlog: verify blobs: %w", err)
		}
		if addr := blobAddress(hash); addr != hash || BlobHash(b) != hash {
			if !keyring.IsSealed(b) {
				return v.fail(0, addr, "content does not match its hash")
			}
			// Opened once the cursor is closed: opening reads a key
			// through the same snapshot.
			sealed = append(sealed, hash)
		}
		rep.Blobs++
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("eventlog: verify blobs: %w", err)
	}
	rows.Close()
	for _, hash := range sealed {
		rep.SealedBlobs++
		b, _, err := v.blob(ctx, hash)
		if err != nil {
			return nil, err
		}
		addr := blobAddress(hash)
		if _, fail, err := v.unsealBlob(ctx, addr, b); err != nil || fail != "" {
			if err != nil {
				return nil, err
			}
			return v.fail(0, addr, "%s", fail)
		}
	}
	return rep, nil
}

// checkTreeHead compares the tree head the writer recorded with the one
// recomputed, and with an HMAC key checks its MAC. It reports done when
// it recorded a failure.
func (v *verifier) checkTreeHead(meta storeMeta, h *chainHasher, last int64, got TreeHead) bool {
	stored, mac, err := parseMerkleHead(meta.merkleHead)
	switch {
	case err != nil:
		v.fail(0, "", "%v", err)
		return true
	case stored.Size > last:
		v.fail(last+1, "", "event missing: the recorded tree head has %d events and the log ends at seq %d, so events were deleted from its tail", stored.Size, last)
		return true
	case stored.Size < last:
		v.fail(stored.Size+1, "", "the recorded tree head stops at seq %d, before the log's last seq %d: it was altered", stored.Size, last)
		return true
	case last > 0 && stored.Root != got.Root:
		at := last
		if last < v.rep.Head.Seq {
			// A head behind the log (built after the commit) whose root
			// is not its tree's: the first event it was meant to cover
			// next is where the record breaks.
			at = last + 1
		}
		v.fail(at, "", "the recorded tree head's root %s differs from the recomputed %s: it was altered", stored.Root, got.Root)
		return true
	case h.keyed && mac != h.headMAC(stored.String()):
		v.fail(last, "", "the tree head's HMAC does not match: the log was rewritten by someone without the HMAC key (or the key differs)")
		return true
	}
	return false
}

// checkHeads checks the recorded heads of opts at the event r, the last
// one added to tree. It reports done when it recorded a failure.
func (v *verifier) checkHeads(opts VerifyOptions, r row, tree *treeChecker, headFound, treeFound *bool) bool {
	if opts.Head != nil && r.Seq == opts.Head.Seq {
		if r.Hash != opts.Head.Hash {
			v.fail(r.Seq, "", "hash %s differs from the recorded head %s", r.Hash, opts.Head.Hash)
			return true
		}
		*headFound = true
	}
	if opts.Tree != nil && r.Seq == opts.Tree.Size {
		if root := tree.root(); root != opts.Tree.Root {
			v.fail(r.Seq, "", "the tree of the first %d events has root %s, not the recorded %s: the log was rewritten", r.Seq, root, opts.Tree.Root)
			return true
		}
		*treeFound = true
	}
	return false
}

// storedTree reads the stored tree hashes that the leaves of rs add: the
// ids from StoredHashCount(after) on, by id.
func (v *verifier) storedTree(ctx context.Context, after int64, rs []leafRow) (map[int64]tlog.Hash, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	last := max(rs[len(rs)-1].Seq, after+int64(len(rs)))
	from, to := tlog.StoredHashCount(after), tlog.StoredHashCount(last)
	// From the row that may hold index from (it can start before it).
	rows, err := v.tx.QueryContext(ctx, v.s.rebind(`SELECT id, hash FROM tree_hashes WHERE id >= COALESCE((SELECT MAX(id) FROM tree_hashes WHERE id <= ?), 0) AND id < ? ORDER BY id`), from, to)
	if err != nil {
		return nil, storageErr("verify the Merkle tree", err)
	}
	defer rows.Close()
	out := make(map[int64]tlog.Hash, 2*len(rs))
	for rows.Next() {
		var r treeRow
		if err := rows.Scan(&r.first, &r.hashes); err != nil {
			return nil, storageErr("verify the Merkle tree", err)
		}
		ids, ok := r.ids(v.meta)
		if !ok {
			// Not whole hashes: the first index it claims never
			// equals a recomputed hash by chance.
			var h tlog.Hash
			copy(h[:], r.hashes)
			h[0] ^= 0xff
			out[r.first] = h
			continue
		}
		for i, id := range ids {
			if id < from || id >= to {
				continue
			}
			var h tlog.Hash
			copy(h[:], r.hashes[i*tlog.HashSize:])
			if prev, dup := out[id]; dup && prev != h {
				h[0] ^= 0xff // rows that overlap and disagree
			}
			out[id] = h
		}
	}
	if err := rows.Err(); err != nil {
		return nil, storageErr("verify the Merkle tree", err)
	}
	return out, nil
}

// treeChecker recomputes the Merkle tree leaf by leaf, keeping only the
// roots of its complete subtrees, and compares every hash tlog stores for
// a leaf with the stored one.
type treeChecker struct {
	n     int64       // leaves added
	stack []tlog.Hash // complete subtree roots, largest first
}

// checkLeaf adds the leaf of the event at seq to tree and, if the
// recorded tree covers it, returns why the stored tree disagrees, or "".
func (v *verifier) checkLeaf(tree *treeChecker, seq int64, leaf tlog.Hash, inRow bool, stored map[int64]tlog.Hash) string {
	if seq > v.treeTo {
		tree.add(leaf)
		return ""
	}
	reason := tree.check(leaf, inRow, stored)
	if seq == v.treeTo {
		v.rootAt = tree.root()
	}
	return reason
}

// add adds a leaf and returns the ids and hashes tlog stores for it.
func (t *treeChecker) add(leaf tlog.Hash) (id int64, want []tlog.Hash) {
	id = tlog.StoredHashIndex(0, t.n)
	want = []tlog.Hash{leaf}
	h := leaf
	for i := t.n; i&1 == 1; i >>= 1 {
		h = tlog.NodeHash(t.stack[len(t.stack)-1], h)
		t.stack = t.stack[:len(t.stack)-1]
		want = append(want, h)
	}
	t.stack = append(t.stack, h)
	t.n++
	return id, want
}

// check adds a leaf and returns why the stored tree disagrees, or "".
// inRow says the leaf hash is the row's hash column, not in tree_hashes.
func (t *treeChecker) check(leaf tlog.Hash, inRow bool, stored map[int64]tlog.Hash) string {
	id, want := t.add(leaf)
	for k, w := range want {
		if k == 0 && inRow {
			continue
		}
		got, ok := stored[id+int64(k)]
		switch {
		case !ok:
			return fmt.Sprintf("its leaf is missing from the Merkle tree (stored hash %d)", id+int64(k))
		case got != w && k == 0:
			return "its leaf differs from the Merkle tree's: the row or the tree was altered"
		case got != w:
			return fmt.Sprintf("the Merkle tree's stored hash %d differs from its recomputation: the tree was altered", id+int64(k))
		}
	}
	return ""
}

// root is the root of the tree of the leaves added so far.
func (t *treeChecker) root() tlog.Hash {
	if len(t.stack) == 0 {
		return tlog.Hash{}
	}
	r := t.stack[len(t.stack)-1]
	for i := len(t.stack) - 2; i >= 0; i-- {
		r = tlog.NodeHash(t.stack[i], r)
	}
	return r
}
