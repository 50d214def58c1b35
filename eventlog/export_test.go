package eventlog

import (
	"context"
	"database/sql"

	"github.com/gorath/rath/events"
)

// WithAfterVersionRead returns opts with a hook that runs when the writer
// has read data_version and before it reads the chain tail.
func WithAfterVersionRead(opts Options, f func()) Options {
	opts.afterVersionRead = f
	return opts
}

// WithoutWriteGate returns opts with the write gate off, for the
// benchmark that measures what it costs and buys.
func WithoutWriteGate(opts Options) Options {
	opts.withoutWriteGate = true
	return opts
}

// EventHashForTest exposes the chain hasher to tests.
func EventHashForTest(format int, runID string, hasRun bool) string {
	return newChainHasher(nil).eventHash(format, "", 1, "s", 1, "t", 1, runID, hasRun, []byte(`{}`), 0)
}

// RewriteAsFormat1 turns a store into one written before store_meta
// existed (commit 7d73e0a): every event rehashed with hash format 1 under
// key, no store_meta rows, no salts and no Merkle tree. The update trigger
// must be dropped first.
func RewriteAsFormat1(db *sql.DB, key []byte) error {
	rows, err := db.Query(selectEvents + ` ORDER BY seq`)
	if err != nil {
		return err
	}
	var rs []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.Seq, &r.Stream, &r.Version, &r.Type, &r.TypeVersion, &r.RunID, &r.Payload, &r.At, &r.Hash); err != nil {
			rows.Close()
			return err
		}
		rs = append(rs, r)
	}
	rows.Close()
	h, prev := newChainHasher(key), ""
	for _, r := range rs {
		prev = h.eventHash(hashFormat1, prev, r.Seq, r.Stream, r.Version, r.Type, r.TypeVersion, r.RunID.String, r.RunID.Valid, []byte(r.Payload), r.At)
		if _, err := db.Exec(`UPDATE events SET hash = ? WHERE seq = ?`, prev, r.Seq); err != nil {
			return err
		}
	}
	// A log of that age had no salts and no Merkle tree.
	for _, q := range []string{`UPDATE events SET salt = NULL`, `DROP TRIGGER IF EXISTS tree_hashes_no_delete`, `DELETE FROM tree_hashes`, `DELETE FROM store_meta`} {
		if _, err := db.Exec(q); err != nil {
			return err
		}
	}
	return nil
}

// WithChainRows returns opts that make the writer write what a rath before
// the Merkle log wrote: hash-chain rows, no salts, no tree.
func WithChainRows(opts Options) Options {
	opts.chainRows = true
	return opts
}

// SetLegacyRows makes s write rows as before the compact row format (hex
// hashes, whole payloads), to build mixed logs.
func SetLegacyRows(s *Store, on bool) { s.legacyRows = on }

// StoredPayloadForTest returns the bytes an event row of SQLite stores
// for payload (a chunk.appended loses its leading session field).
func StoredPayloadForTest(stream, typ string, payload []byte) []byte {
	return events.CompactPayload(stream, typ, payload)
}

// LeaveATransactionOpen begins a transaction on the writer's connection
// behind its back, as a BEGIN that a timeout cut short, and that ran all
// the same, leaves one.
func LeaveATransactionOpen(s *Store) error {
	_, err := s.w.conn.ExecContext(context.Background(), `BEGIN`)
	return err
}
