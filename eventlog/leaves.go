package eventlog

import (
	"context"
	"fmt"
	"github.com/gorath/rath/events"
	"strings"
	"time"
)

// Leaf is a stored event as the Merkle log commits to it: the bytes its
// leaf hashes and, for an event of the Merkle format, the payload and
// salt its line's commitment is computed from. An exported run bundle
// (package bundle) is made of these.
type Leaf struct {
	// Event is the event, its Payload whole (as appended: expanded from
	// the compact row, read from its blob when stored as one).
	events.Event
	// Line is the leaf line: tlog.RecordHash(Line) is the leaf hash.
	Line []byte
	// Salt is the payload's salt: SHA-256(Salt || Payload) is the
	// commitment in Line. Nil for an event of the hash chain (written
	// before the Merkle log), whose line commits to its chain record.
	Salt []byte
}

// Leaves returns the leaves of the events at seqs, in the order given,
// read from one snapshot. A seq with no event is ErrNotFound; a row whose
// leaf line cannot be computed (its salt or its payload's blob is missing
// or altered) is a *VerifyError naming it.
func (s *Store) Leaves(ctx context.Context, seqs []int64) ([]Leaf, error) {
	tx, err := s.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("eventlog: leaves: %w", err)
	}
	defer tx.Rollback()
	meta, err := readMeta(ctx, tx)
	if err != nil {
		return nil, err
	}
	got := make(map[int64]Leaf, len(seqs))
	for start := 0; start < len(seqs); start += maxHashesPerRead {
		part := seqs[start:min(start+maxHashesPerRead, len(seqs))]
		args := make([]any, len(part))
		for i, seq := range part {
			args[i] = seq
		}
		query := s.rebind(selectLeafRows + ` WHERE seq IN (?` + strings.Repeat(",?", len(part)-1) + `)`)
		rs, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return nil, storageErr("read leaves", err)
		}
		var rows []leafRow
		for rs.Next() {
			var r leafRow
			if err := rs.Scan(&r.Seq, &r.Stream, &r.Version, &r.Type, &r.TypeVersion, &r.RunID, &r.Payload, &r.At, &r.Hash, &r.Salt); err != nil {
				rs.Close()
				return nil, storageErr("read leaves", err)
			}
			r.Hash = hashText(r.Hash)
			rows = append(rows, r)
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return nil, storageErr("read leaves", err)
		}
		for _, r := range rows {
			line, fail, err := s.rowLeafLine(ctx, tx, meta, r)
			if err == nil && fail == "" {
				var payload []byte
				if payload, fail, err = s.fullPayload(ctx, tx, r.row); fail == "" && err == nil {
					ev := events.Event{Seq: r.Seq, Stream: r.Stream, Version: r.Version, Type: r.Type, TypeVersion: r.TypeVersion,
						RunID: r.RunID.String, Payload: payload, At: time.Unix(0, r.At).UTC(), Hash: r.Hash}
					l := Leaf{Event: ev, Line: line}
					if meta.merkleFormat(r.Seq) {
						l.Salt = r.Salt
					}
					got[r.Seq] = l
				}
			}
			if err != nil {
				return nil, err
			}
			if fail != "" {
				return nil, &VerifyError{Seq: r.Seq, Reason: fail}
			}
		}
	}
	out := make([]Leaf, len(seqs))
	for i, seq := range seqs {
		l, ok := got[seq]
		if !ok {
			return nil, fmt.Errorf("%w: seq %d", ErrNotFound, seq)
		}
		out[i] = l
	}
	return out, nil
}
