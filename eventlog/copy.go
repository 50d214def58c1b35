package eventlog

import (
	"context"
	"errors"
	"fmt"
)

// ErrNotEmpty is returned by CopyFrom when the destination log has events.
var ErrNotEmpty = errors.New("eventlog: the destination log is not empty")

// CopyStats counts what CopyFrom moved.
type CopyStats struct {
	Events int64
	Blobs  int64
	Head   Head
}

// CopyFrom copies src's whole log into s, event for event: the same seqs,
// streams, versions, payloads (large ones still as blob references),
// times and hashes, every blob, and the chain's metadata (its key
// fingerprint and hash format). s must be empty; the copy is one
// transaction, so it lands whole or not at all. Appends to src made while
// it runs are not copied (it copies up to the head it saw first). The
// projections of s are not filled: rebuild them afterwards (package
// projections). Verify both afterwards: their heads are equal.
//
// This is how a log moves between backends, for example from the
// embedded SQLite store to a PostgreSQL server.
func (s *Store) CopyFrom(ctx context.Context, src *Store, progress func(done, total int64)) (CopyStats, error) {
	var stats CopyStats
	snap, err := src.Snapshot(ctx)
	if err != nil {
		return stats, fmt.Errorf("eventlog: copy: %w", err)
	}
	defer snap.Rollback()
	if err := snap.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM events`).Scan(&stats.Head.Seq); err != nil {
		return stats, fmt.Errorf("eventlog: copy: read head: %w", err)
	}
	meta, err := readMeta(ctx, snap)
	if err != nil {
		return stats, err
	}
	err = s.Exclusive(ctx, func(ctx context.Context, tx *Tx) error {
		var n int64
		if err := tx.QueryRow(`SELECT COUNT(*) FROM events`).Scan(&n); err != nil {
			return fmt.Errorf("eventlog: copy: %w", err)
		}
		if n > 0 {
			return fmt.Errorf("%w (%d events)", ErrNotEmpty, n)
		}
		stats.Events, stats.Blobs = 0, 0
		if err := copyBlobs(ctx, snap, src, tx, &stats); err != nil {
			return err
		}
		prev := ""
		for after := int64(0); after < stats.Head.Seq; {
			rows, err := scanLeafRows(ctx, snap, src.d, after, stats.Head.Seq, scanPage)
			if err != nil {
				return fmt.Errorf("eventlog: copy: %w", err)
			}
			if len(rows) == 0 {
				return fmt.Errorf("eventlog: copy: the source log ends at seq %d, before its head %d", after, stats.Head.Seq)
			}
			for _, r := range rows {
				if r.Seq != after+1 {
					return fmt.Errorf("eventlog: copy: the source log has a gap before seq %d: verify it", r.Seq)
				}
				var runID any
				if r.RunID.Valid {
					runID = r.RunID.String
				}
				var salt any
				if r.Salt != nil {
					salt = r.Salt
				}
				if _, err := tx.Exec(insertEvent, r.Seq, r.Stream, r.Version, r.Type, r.TypeVersion, runID, r.Payload, r.At, s.d.storedHash(r.Hash), salt); err != nil {
					return storageErr(fmt.Sprintf("copy seq %d", r.Seq), err)
				}
				after, prev = r.Seq, r.Hash
				stats.Events++
			}
			if progress != nil {
				progress(stats.Events, stats.Head.Seq)
			}
		}
		stats.Head.Hash = prev
		if err := copyTree(ctx, snap, src, tx); err != nil {
			return err
		}
		for k, v := range map[string]string{metaKeyFingerprint: meta.fingerprint, metaChainV2From: metaValue(meta.v2From), metaMerkleFrom: metaValue(meta.merkleFrom), metaMerkleHead: meta.merkleHead} {
			if v == "" {
				continue
			}
			if _, err := tx.Exec(upsertMeta, k, v); err != nil {
				return storageErr("copy store_meta", err)
			}
		}
		if err := s.d.copied(tx, stats.Head.Seq); err != nil {
			return err
		}
		// The writer's cached tail and heads describe the empty log.
		tx.w.forceReload()
		return nil
	})
	if err != nil {
		return CopyStats{}, err
	}
	return stats, nil
}

func metaValue(v2From int64) string {
	if v2From <= 0 {
		return ""
	}
	return fmt.Sprint(v2From)
}

// copyTree copies src's stored Merkle tree hashes, a page at a time in id
// order: the copy's tree is the source's, and Verify checks it against the
// copied rows.
func copyTree(ctx context.Context, snap queryer, src *Store, tx *Tx) error {
	for after := int64(-1); ; {
		rows, err := snap.QueryContext(ctx, src.rebind(`SELECT id, hash FROM tree_hashes WHERE id > ? ORDER BY id LIMIT 2000`), after)
		if err != nil {
			return fmt.Errorf("eventlog: copy the Merkle tree: %w", err)
		}
		var args []any
		for rows.Next() {
			var id int64
			var h []byte
			if err := rows.Scan(&id, &h); err != nil {
				rows.Close()
				return fmt.Errorf("eventlog: copy the Merkle tree: %w", err)
			}
			args = append(args, id, h)
			after = id
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("eventlog: copy the Merkle tree: %w", err)
		}
		for start := 0; start < len(args); start += 2 * maxTreeRows {
			part := args[start:min(start+2*maxTreeRows, len(args))]
			if _, err := tx.Exec(insertTreeRows(len(part)/2), part...); err != nil {
				return storageErr("copy the Merkle tree", err)
			}
		}
		if len(args) < 2*2000 {
			return nil
		}
	}
}

// copyBlobs copies every blob of src, a page at a time in hash order.
func copyBlobs(ctx context.Context, snap queryer, src *Store, tx *Tx, stats *CopyStats) error {
	last := ""
	for {
		rows, err := snap.QueryContext(ctx, src.rebind(`SELECT hash, bytes FROM blobs WHERE hash > ? ORDER BY hash LIMIT 500`), last)
		if err != nil {
			return fmt.Errorf("eventlog: copy blobs: %w", err)
		}
		n := 0
		for rows.Next() {
			var h string
			var b []byte
			if err := rows.Scan(&h, &b); err != nil {
				rows.Close()
				return fmt.Errorf("eventlog: copy blobs: %w", err)
			}
			if _, err := tx.Exec(`INSERT INTO blobs (hash, size, bytes) VALUES (?, ?, ?) ON CONFLICT (hash) DO NOTHING`, h, len(b), b); err != nil {
				rows.Close()
				return storageErr("copy blob", err)
			}
			last = h
			n++
			stats.Blobs++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("eventlog: copy blobs: %w", err)
		}
		if n < 500 {
			return nil
		}
	}
}
