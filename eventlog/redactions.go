package eventlog

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gorath/rath/events"
)

// What a redaction left, read back: the redactions and their records,
// verify's checks of them, and an event's opening. erase.go redacts.

// Redacted reports whether the event at seq is redacted, and by what.
func (s *Store) Redacted(ctx context.Context, seq int64) (RedactionInfo, bool, error) {
	all, err := s.redactionsWhere(ctx, s.rdb, `WHERE r.seq = ?`, seq)
	if err != nil || len(all) == 0 {
		return RedactionInfo{}, false, err
	}
	return all[0], true, nil
}

// Redactions lists every redacted event in seq order.
func (s *Store) Redactions(ctx context.Context) ([]RedactionInfo, error) {
	return s.redactionsWhere(ctx, s.rdb, ``)
}

// redactionsWhere reads redactions rows with what their records say.
func (s *Store) redactionsWhere(ctx context.Context, q queryer, where string, args ...any) ([]RedactionInfo, error) {
	rs, err := q.QueryContext(ctx, s.rebind(`SELECT r.seq, r.record_seq, r.commitment, e.seq, e.stream, e.type, e.type_version, e.payload, e.at
		FROM redactions r LEFT JOIN events e ON e.seq = r.record_seq `+where+` ORDER BY r.seq`), args...)
	if err != nil {
		return nil, storageErr("read redactions", err)
	}
	var out []RedactionInfo
	recRows := map[int64]row{}
	for rs.Next() {
		var ri RedactionInfo
		var seq, at, version sql.NullInt64
		var stream, typ, payload sql.NullString
		if err := rs.Scan(&ri.Seq, &ri.RecordSeq, &ri.Commitment, &seq, &stream, &typ, &version, &payload, &at); err != nil {
			rs.Close()
			return nil, storageErr("read redactions", err)
		}
		ri.At = time.Unix(0, at.Int64).UTC()
		if typ.String == events.TypeEvidenceRedacted {
			recRows[ri.RecordSeq] = row{Seq: seq.Int64, Stream: stream.String, Type: typ.String, TypeVersion: int(version.Int64), Payload: payload.String}
		}
		out = append(out, ri)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return nil, storageErr("read redactions", err)
	}
	// The records are decoded with the cursor closed: one kept in blobs
	// (a large retention's) is read with another query.
	records := map[int64]*events.EvidenceRedacted{}
	for seq, r := range recRows {
		rec, err := s.decodeRecord(ctx, q, r)
		if err != nil {
			return nil, err
		}
		records[seq] = rec
	}
	for i := range out {
		if rec := records[out[i].RecordSeq]; rec != nil {
			out[i].By, out[i].Reason = rec.By, rec.Reason
		}
	}
	return out, nil
}

// decodeRecord decodes an evidence.redacted row, its payload read from
// blobs if kept there; nil for one that does not decode.
func (s *Store) decodeRecord(ctx context.Context, q queryer, r row) (*events.EvidenceRedacted, error) {
	payload, fail, err := s.fullPayload(ctx, q, r)
	if err != nil || fail != "" {
		return nil, err
	}
	p, err := events.Decode(r.Type, r.TypeVersion, payload)
	if err != nil {
		return nil, nil
	}
	rec, _ := p.(*events.EvidenceRedacted)
	return rec, nil
}

// redactedCommitment is the payload commitment of a redacted event, from
// the redactions table; fail says why there is none.
func redactedCommitment(ctx context.Context, q queryer, d dialect, seq int64) (commit [32]byte, fail string, err error) {
	var text string
	err = q.QueryRowContext(ctx, d.rebind(`SELECT commitment FROM redactions WHERE seq = ?`), seq).Scan(&text)
	if errors.Is(err, sql.ErrNoRows) {
		return commit, "its payload was cleared without a recorded redaction: the row was altered", nil
	}
	if err != nil {
		return commit, "", storageErr("read redactions", err)
	}
	b, derr := hex.DecodeString(text)
	if derr != nil || len(b) != len(commit) || !bytes.Equal([]byte(hex.EncodeToString(b)), []byte(text)) {
		return commit, "its recorded redaction's commitment is not a hash: it was altered", nil
	}
	copy(commit[:], b)
	return commit, "", nil
}

// noteRecord keeps an evidence.redacted event for checkRedactions.
func (v *verifier) noteRecord(ctx context.Context, r row) error {
	if v.records == nil {
		v.records, v.atOf = map[int64]*events.EvidenceRedacted{}, map[int64]int64{}
	}
	rec, err := v.s.decodeRecord(ctx, v.tx, r)
	if err != nil {
		return err
	}
	v.records[r.Seq], v.atOf[r.Seq] = rec, r.At
	return nil
}

// checkRedactions checks every redacted event against its redactions row:
// the row must name an evidence.redacted event after it that covers it,
// and no redactions row may name an event that is not redacted. It lists
// them in the report, and reports done when it recorded a failure.
func (v *verifier) checkRedactions(ctx context.Context) (bool, error) {
	rows, err := v.tx.QueryContext(ctx, `SELECT seq, record_seq, commitment FROM redactions ORDER BY seq`)
	if err != nil {
		return false, storageErr("verify redactions", err)
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		var ri RedactionInfo
		if err := rows.Scan(&ri.Seq, &ri.RecordSeq, &ri.Commitment); err != nil {
			return false, storageErr("verify redactions", err)
		}
		if i >= len(v.redacted) || v.redacted[i] != ri.Seq {
			v.fail(ri.Seq, "", "a redaction is recorded for it but its payload is there: the redactions table was altered")
			return true, nil
		}
		i++
		rec := v.records[ri.RecordSeq]
		if ri.RecordSeq <= ri.Seq || rec == nil || !rec.Covers(ri.Seq) {
			v.fail(ri.Seq, "", "its payload was cleared but seq %d is no evidence.redacted event naming it: the redaction was forged", ri.RecordSeq)
			return true, nil
		}
		ri.By, ri.Reason, ri.At = rec.By, rec.Reason, time.Unix(0, v.atOf[ri.RecordSeq]).UTC()
		v.rep.Redactions = append(v.rep.Redactions, ri)
	}
	if err := rows.Err(); err != nil {
		return false, storageErr("verify redactions", err)
	}
	if i < len(v.redacted) {
		// rowLeafLine found its commitment, so this cannot happen unless
		// the table changed under the snapshot.
		v.fail(v.redacted[i], "", "its payload was cleared without a recorded redaction: the row was altered")
		return true, nil
	}
	return false, nil
}

// RedactedInRun lists the redacted events of a run (its run_id) up to
// toSeq (0: the head), in seq order.
func (s *Store) RedactedInRun(ctx context.Context, runID string, toSeq int64) ([]int64, error) {
	if toSeq <= 0 {
		toSeq = 1 << 62
	}
	var seqs []int64
	err := s.rdb.SelectContext(ctx, &seqs, s.rebind(`SELECT r.seq FROM redactions r JOIN events e ON e.seq = r.seq WHERE e.run_id = ? AND r.seq <= ? ORDER BY r.seq`), runID, toSeq)
	if err != nil {
		return nil, storageErr("read redactions", err)
	}
	return seqs, nil
}

// Opening is what opens an event's payload commitment: its salt and its
// payload as appended, so that SHA-256(Salt || Payload) is the commitment
// its leaf line holds. A redacted event has none.
type Opening struct {
	Salt    []byte
	Payload []byte
}

// Opening returns the opening of the event at seq: an archive or a bundle
// keeps it beside the leaf line so the payload checks against the log.
// It fails with ErrRedacted (through a *DecodeError) for a redacted
// event and with a *RedactError for one written before the Merkle log.
func (s *Store) Opening(ctx context.Context, seq int64) (Opening, error) {
	tx, err := s.Snapshot(ctx)
	if err != nil {
		return Opening{}, fmt.Errorf("eventlog: opening: %w", err)
	}
	defer tx.Rollback()
	rows, err := readLeafRowsBySeq(ctx, tx, s.d, []int64{seq})
	if err != nil {
		return Opening{}, err
	}
	r, ok := rows[seq]
	switch {
	case !ok:
		return Opening{}, invalid("opening: no event at seq %d", seq)
	case isRedacted(r.Payload):
		return Opening{}, &events.DecodeError{Seq: seq, Type: r.Type, Err: events.ErrRedacted}
	case len(r.Salt) != SaltSize:
		return Opening{}, &RedactError{Seq: seq, Reason: "it has no payload salt (written before the Merkle log, or altered)"}
	}
	payload, fail, err := s.fullPayload(ctx, tx, r.row)
	if err != nil {
		return Opening{}, err
	}
	if fail != "" {
		return Opening{}, fmt.Errorf("eventlog: opening of seq %d: %s", seq, fail)
	}
	return Opening{Salt: r.Salt, Payload: payload}, nil
}

// BlobRefs lists the stored blobs an event's payload references: its
// outputs, files and attachments, and for a model call its request record
// and every message segment that chains to.
func (s *Store) BlobRefs(ctx context.Context, ev events.Event) ([]string, error) {
	refs := map[string]bool{}
	if err := s.blobRefs(ctx, s.rdb, ev.Type, ev.TypeVersion, ev.Payload, refs); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(refs))
	for h := range refs {
		out = append(out, h)
	}
	slices.Sort(out)
	return out, nil
}

// appendedKey carries, to an AppendTx function, the events its append
// wrote in the same transaction.
type appendedKey struct{}

func contextWithAppended(ctx context.Context, evs []events.Event) context.Context {
	return context.WithValue(ctx, appendedKey{}, evs)
}

func appendedFromContext(ctx context.Context) []events.Event {
	evs, _ := ctx.Value(appendedKey{}).([]events.Event)
	return evs
}
