package eventlog

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/keyring"

	"golang.org/x/mod/sumdb/tlog"
)

// Redaction with proof (docs/EVIDENCE.md, "Redaction and retention"): a
// payload is deleted, its leaf is not. The row keeps every column the leaf
// line names; its payload becomes events.RedactedMarker and its salt NULL, and its
// payload commitment moves to the redactions table, so the leaf line (and
// with it the Merkle tree, every proof and every checkpoint) is recomputed
// without the payload. Who, when and why is an evidence.redacted event on
// StreamEvidence, itself a leaf; the redactions row names it. Not to be
// confused with the Redactor (redact.go), which scrubs secrets before an
// event is written.

// ErrNotRedactable is matched by a *RedactError.
var ErrNotRedactable = errors.New("eventlog: the event cannot be redacted")

// RedactError says why an event of a redaction cannot be redacted; nothing
// was changed.
type RedactError struct {
	Seq    int64
	Reason string
}

func (e *RedactError) Error() string {
	return fmt.Sprintf("eventlog: cannot redact seq %d: %s", e.Seq, e.Reason)
}

// Is makes errors.Is(err, ErrNotRedactable) true.
func (e *RedactError) Is(target error) bool { return target == ErrNotRedactable }

// seqRanges folds ascending seqs into inclusive ranges.
func seqRanges(seqs []int64) [][2]int64 {
	var out [][2]int64
	for _, s := range seqs {
		if n := len(out); n > 0 && out[n-1][1]+1 == s {
			out[n-1][1] = s
			continue
		}
		out = append(out, [2]int64{s, s})
	}
	return out
}

// RedactRequest is one redaction: the events whose payloads go, and who
// asks and why (both required, printed by verify).
type RedactRequest struct {
	Seqs   []int64
	By     string
	Reason string
	Scope  string // as in EvidenceRedacted; optional
	Target string // as in EvidenceRedacted; optional
	// Guard, if set, runs in the redaction's transaction, under the write
	// lock, before any payload is cleared: no event can be appended
	// between what it reads and the commit. Its error aborts the
	// redaction, changing nothing, and is returned as is (wrapped). A
	// caller that chose the events from what the log said earlier (a
	// retention) checks there that the choice still holds.
	Guard func(ctx context.Context, tx *sql.Tx) error
}

// maxRedactText bounds By, Reason, Scope and Target.
const maxRedactText = 1000

func (r RedactRequest) check() error {
	if len(r.Seqs) == 0 {
		return invalid("redact: no events")
	}
	for name, v := range map[string]string{"by": r.By, "reason": r.Reason, "scope": r.Scope, "target": r.Target} {
		if (name == "by" || name == "reason") && strings.TrimSpace(v) == "" {
			return invalid("redact: %s is required", name)
		}
		if len(v) > maxRedactText {
			return invalid("redact: %s is longer than %d bytes", name, maxRedactText)
		}
		if strings.ContainsFunc(v, func(c rune) bool { return unicode.IsControl(c) || c == unicode.ReplacementChar }) {
			return invalid("redact: %s holds control characters", name)
		}
	}
	return nil
}

// RedactResult reports a redaction.
type RedactResult struct {
	// Record is the evidence.redacted event (zero when nothing was left
	// to redact).
	Record events.Event
	// Redacted are the seqs whose payloads were deleted; Already those
	// that were redacted before (left as they were).
	Redacted, Already []int64
	// PayloadBytes is the size of the deleted payloads (as appended);
	// Blobs and BlobBytes the blobs deleted with them.
	PayloadBytes     int64
	Blobs, BlobBytes int64
}

// RedactionInfo is one redacted event: its seq, the evidence.redacted
// event that redacted it (RecordSeq, at At) and what that event says.
type RedactionInfo struct {
	Seq        int64     `json:"seq"`
	RecordSeq  int64     `json:"record_seq"`
	At         time.Time `json:"at"`
	By         string    `json:"by"`
	Reason     string    `json:"reason"`
	Commitment string    `json:"commitment"` // hex SHA-256(salt || payload), as the leaf line holds it
}

// String formats the redaction as verify lists it.
func (r RedactionInfo) String() string {
	return fmt.Sprintf("seq %d: redacted at seq %d by %s: %s", r.Seq, r.RecordSeq, r.By, r.Reason)
}

// isRedacted reports whether a stored payload is the redaction marker.
func isRedacted(stored string) bool { return stored == events.RedactedMarker }

// Redact deletes the payloads of the events req.Seqs, with their salts and
// every blob no unredacted payload still references, and keeps their
// leaves: the log, its tree and every proof verify as before. It appends
// an evidence.redacted event naming the events, req.By and req.Reason, in
// the same transaction. Events already redacted are skipped (Already).
//
// It refuses, changing nothing (a *RedactError): an event that does not
// exist, an evidence.redacted event, an event written before the Merkle
// log (its leaf is its hash-chain record, which needs the payload), and an
// event whose row no longer matches its leaf (redacting it would launder
// the tampering; run verify). Finding unreferenced blobs reads every
// unredacted payload that may reference one, inside the write transaction:
// appends wait meanwhile.
func (s *Store) Redact(ctx context.Context, req RedactRequest) (RedactResult, error) {
	if err := req.check(); err != nil {
		return RedactResult{}, err
	}
	seqs := slices.Clone(req.Seqs)
	slices.Sort(seqs)
	seqs = slices.Compact(seqs)
	var res RedactResult
	for attempt := 0; ; attempt++ {
		todo, already, shapes, err := s.redactable(ctx, seqs)
		if err != nil {
			return RedactResult{}, err
		}
		res = RedactResult{Already: already}
		if len(todo) == 0 {
			return res, nil
		}
		version, err := s.StreamVersion(ctx, events.StreamEvidence)
		if err != nil {
			return RedactResult{}, err
		}
		rec := events.EvidenceRedacted{Ranges: seqRanges(todo), By: req.By, Reason: req.Reason, Scope: req.Scope, Target: req.Target, Shapes: shapes}
		// The blobs to delete are only known inside the transaction, after
		// the event is written; they are reported in the result and the
		// event names the events, which is what verify checks.
		fn := func(ctx context.Context, tx *sql.Tx) error {
			if req.Guard != nil {
				if err := req.Guard(ctx, tx); err != nil {
					return err
				}
			}
			return s.redactInTx(ctx, tx, version+1, todo, &res)
		}
		stored, err := s.AppendTx(ctx, fn, Write{Stream: events.StreamEvidence, Expected: version, Events: []events.Payload{rec}})
		var ce *ConflictError
		if errors.As(err, &ce) && attempt < 5 {
			continue // another redaction took the version; recheck and retry
		}
		if err != nil {
			return RedactResult{}, err
		}
		res.Record, res.Redacted = stored[0], todo
		return res, nil
	}
}

// redactable checks seqs before the transaction: which can be redacted,
// which already are, and the shapes to keep of the former (shape.go).
// redactInTx checks again under the write lock; a payload read here is
// the one it clears, as a payload only ever changes to the marker.
func (s *Store) redactable(ctx context.Context, seqs []int64) (todo, already []int64, shapes []events.Shape, err error) {
	meta, err := readMeta(ctx, s.rdb)
	if err != nil {
		return nil, nil, nil, err
	}
	rows, err := readLeafRowsBySeq(ctx, s.rdb, s.d, seqs)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, seq := range seqs {
		r, ok := rows[seq]
		if !ok {
			return nil, nil, nil, &RedactError{Seq: seq, Reason: "no such event"}
		}
		switch {
		case r.Type == events.TypeEvidenceRedacted:
			return nil, nil, nil, &RedactError{Seq: seq, Reason: "it is the record of a redaction"}
		case !meta.merkleFormat(seq):
			return nil, nil, nil, &RedactError{Seq: seq, Reason: "it was written before the Merkle log: its leaf is its hash-chain record, which needs the payload"}
		case isRedacted(r.Payload):
			already = append(already, seq)
			continue
		}
		todo = append(todo, seq)
		if !events.KeepsShape(r.Type) {
			continue
		}
		payload, fail, err := s.fullPayload(ctx, s.rdb, r.row)
		if err != nil {
			return nil, nil, nil, err
		}
		if fail != "" {
			return nil, nil, nil, &RedactError{Seq: seq, Reason: "its row does not match its leaf (" + fail + "); run verify"}
		}
		sh, _, err := events.ShapeOf(seq, r.Type, r.TypeVersion, payload)
		if err != nil {
			return nil, nil, nil, &RedactError{Seq: seq, Reason: err.Error()}
		}
		shapes = append(shapes, sh)
	}
	return todo, already, shapes, nil
}

// redactInTx clears the payloads of seqs on the writer's transaction, just
// after the evidence.redacted event at version recVersion was written.
func (s *Store) redactInTx(ctx context.Context, tx *sql.Tx, recVersion int64, seqs []int64, res *RedactResult) error {
	var recSeq int64
	for _, ev := range appendedFromContext(ctx) {
		if ev.Stream == events.StreamEvidence && ev.Version == recVersion {
			recSeq = ev.Seq
		}
	}
	if recSeq == 0 {
		return fmt.Errorf("eventlog: redact: the redaction record (%s version %d) is not among the appended events", events.StreamEvidence, recVersion)
	}
	meta := storeMeta{merkleFrom: 1} // redactable checked the format
	rows, err := readLeafRowsBySeq(ctx, tx, s.d, seqs)
	if err != nil {
		return err
	}
	candidates := map[string]bool{}
	for _, seq := range seqs {
		r, ok := rows[seq]
		if !ok || isRedacted(r.Payload) {
			return &RedactError{Seq: seq, Reason: "it was deleted or redacted meanwhile; run it again"}
		}
		payload, fail, err := s.fullPayload(ctx, tx, r.row)
		if err != nil {
			return err
		}
		if fail != "" || len(r.Salt) != SaltSize {
			return &RedactError{Seq: seq, Reason: "its row does not match its leaf (" + fail + "); run verify"}
		}
		commit := PayloadCommitment(r.Salt, payload)
		line, _, err := s.rowLeafLine(ctx, tx, meta, r)
		if err != nil {
			return err
		}
		if leaf := tlog.RecordHash(line); hex.EncodeToString(leaf[:]) != r.Hash {
			return &RedactError{Seq: seq, Reason: "its row does not match its leaf: it was altered; run verify"}
		}
		if ref, inBlob, _ := StoredInBlob([]byte(r.Payload)); inBlob {
			candidates[ref] = true
		}
		if err := s.blobRefs(ctx, tx, r.Type, r.TypeVersion, payload, candidates); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO redactions (seq, record_seq, commitment) VALUES (?, ?, ?)`), seq, recSeq, hex.EncodeToString(commit[:])); err != nil {
			return storageErr("redact: record the commitment", err)
		}
		if _, err := tx.ExecContext(ctx, s.rebind(`UPDATE events SET payload = ?, salt = NULL WHERE seq = ?`), events.RedactedMarker, seq); err != nil {
			return storageErr("redact: clear the payload", err)
		}
		res.PayloadBytes += int64(len(payload))
	}
	return s.dropUnreferenced(ctx, tx, candidates, res)
}

// readLeafRowsBySeq reads the rows of seqs, by seq.
func readLeafRowsBySeq(ctx context.Context, q queryer, d dialect, seqs []int64) (map[int64]leafRow, error) {
	out := make(map[int64]leafRow, len(seqs))
	for start := 0; start < len(seqs); start += maxHashesPerRead {
		part := seqs[start:min(start+maxHashesPerRead, len(seqs))]
		text, args := inList(selectLeafRows+` WHERE seq IN (`, d, part)
		rs, err := q.QueryContext(ctx, text, args...)
		if err != nil {
			return nil, storageErr("read events", err)
		}
		for rs.Next() {
			var r leafRow
			if err := rs.Scan(&r.Seq, &r.Stream, &r.Version, &r.Type, &r.TypeVersion, &r.RunID, &r.Payload, &r.At, &r.Hash, &r.Salt); err != nil {
				rs.Close()
				return nil, storageErr("read events", err)
			}
			r.Hash = hashText(r.Hash)
			out[r.Seq] = r
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return nil, storageErr("read events", err)
		}
	}
	return out, nil
}

// blobRefs adds to into every blob hash a payload names: any 64 lowercase
// hex digits in it (a tool output, file contents, an attachment), and for
// a model call the message segments its request record chains to.
func (s *Store) blobRefs(ctx context.Context, q queryer, typ string, version int, payload []byte, into map[string]bool) error {
	hexRefs(payload, func(h string) { into[h] = true })
	if typ != events.TypeProviderCalled && typ != events.TypeProviderFailed {
		return nil
	}
	p, err := events.Decode(typ, version, payload)
	if err != nil {
		return nil // verify reports a payload that does not decode
	}
	var next string
	switch e := p.(type) {
	case *events.ProviderCalled:
		next = e.RequestRef
	case *events.ProviderFailed:
		next = e.RequestRef
	}
	for first := true; next != "" && (first || !into[next]); first = false {
		into[next] = true
		copies, err := s.blobCopies(ctx, q, next)
		if err != nil {
			return fmt.Errorf("redact: read a request blob: %w", err)
		}
		b, err := s.openCopies(ctx, next, copies)
		if errors.Is(err, ErrBlobNotFound) || errors.Is(err, keyring.ErrErased) {
			return nil
		}
		if err != nil {
			return err
		}
		if first {
			var rec requestHead
			if json.Unmarshal(b, &rec) != nil {
				return nil
			}
			next = rec.MessagesRef
			continue
		}
		var m messageSegment
		if json.Unmarshal(b, &m) != nil {
			return nil
		}
		next = m.Prev
	}
	return nil
}

// hexRefs calls fn with every run of exactly 64 lowercase hex digits in b.
func hexRefs(b []byte, fn func(string)) {
	n := 0
	for i := 0; i <= len(b); i++ {
		if i < len(b) && isHex(b[i]) {
			n++
			continue
		}
		if n == 64 {
			fn(string(b[i-64 : i]))
		}
		n = 0
	}
}

// dropUnreferenced deletes the candidate blobs that no unredacted payload
// references, reading every such payload that may (a blob pointer, a type
// that references blobs, or one naming a candidate's hash) in the
// transaction.
func (s *Store) dropUnreferenced(ctx context.Context, tx *sql.Tx, candidates map[string]bool, res *RedactResult) error {
	if len(candidates) == 0 {
		return nil
	}
	live := map[string]bool{}
	for after := int64(0); ; {
		rs, err := scanLeafRows(ctx, tx, s.d, after, 1<<62, scanPage)
		if err != nil {
			return err
		}
		for _, r := range rs {
			after = r.Seq
			if isRedacted(r.Payload) {
				continue
			}
			stored := []byte(r.Payload)
			_, inBlob, _ := StoredInBlob(stored)
			_, refers := blobReferrers[r.Type]
			if !inBlob && !refers {
				hexRefs(stored, func(h string) { live[h] = true })
				continue
			}
			if inBlob {
				hexRefs(stored, func(h string) { live[h] = true })
			}
			payload, fail, err := s.fullPayload(ctx, tx, r.row)
			if err != nil {
				return err
			}
			if fail != "" {
				continue
			}
			// A sealed payload names its blobs inside the ciphertext;
			// an erased one names none that anyone can read.
			if payload, _, _, err = s.openPayload(ctx, r.Seq, r.Stream, r.Type, payload); err != nil {
				return err
			}
			if err := s.blobRefs(ctx, tx, r.Type, r.TypeVersion, payload, live); err != nil {
				return err
			}
		}
		if len(rs) < scanPage {
			break
		}
	}
	var drop []string
	for h := range candidates {
		if !live[h] {
			drop = append(drop, h)
		}
	}
	slices.Sort(drop)
	for _, h := range drop {
		// Every copy of the address: the one in clear and each
		// subject's sealed one.
		n, size, err := s.deleteCopies(ctx, tx, h)
		if err != nil {
			return err
		}
		res.Blobs += n
		res.BlobBytes += size
	}
	return nil
}
