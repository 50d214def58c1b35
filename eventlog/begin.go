package eventlog

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
)

// begin opens the write transaction in the store's dialect, which takes
// the chain's write lock and refreshes the caches if another connection
// committed since our last look. For appends it refuses a key that does not match the
// chain's, and records the chain's key fingerprint and hash format with
// the first write; Exclusive's transactions (rebuilds) touch no event and
// need neither. batch is the group commit the transaction is for (nil for
// Exclusive and the tree's build).
func (w *writerState) begin(ctx context.Context, appends bool, batch []*request) error {
	w.keys.endTx()
	clear(w.leasesConfirmed)
	if !w.s.d.seesOtherCommits() {
		w.keys.fresh = false
	}
	if err := w.s.d.begin(ctx, w, batch); err != nil {
		return err
	}
	w.origin = w.lastSeq // (a late transaction's: seqPlaceholder)
	if !appends {
		return nil
	}
	if w.keyErr != nil {
		w.rollback()
		return w.keyErr
	}
	if err := w.writeMeta(ctx); err != nil {
		w.rollback()
		return err
	}
	if err := w.catchUpTree(ctx); err != nil {
		w.rollback()
		w.forceReload()
		return err
	}
	return nil
}

// writeMeta records, in the open transaction, what the chain's next
// events are hashed with: the key's fingerprint (replaced while the chain
// is still empty, so the first event's writer decides) and, once, the
// first seq hashed with hashFormat2.
func (w *writerState) writeMeta(ctx context.Context) error {
	want := keyFingerprint(w.s.opts.HMACKey)
	if w.fingerprint != want && w.lastSeq == 0 || w.fingerprint == "" {
		if err := w.exec(ctx, upsertMeta, metaKeyFingerprint, want); err != nil {
			return storageErr("record key fingerprint", err)
		}
		w.fingerprint, w.metaWritten = want, true
	}
	if w.merkleFrom == 0 && !w.s.opts.chainRows {
		n, err := w.recordOnce(ctx, metaMerkleFrom, w.lastSeq+1)
		if err != nil {
			return err
		}
		w.merkleFrom, w.metaWritten = n, true
	}
	if w.v2From == 0 {
		// recordOnce reads back what is stored: a stale cache may have
		// missed a row another connection wrote (its inserts then collide
		// and the batch is redone after a reload).
		n, err := w.recordOnce(ctx, metaChainV2From, w.lastSeq+1)
		if err != nil {
			return err
		}
		w.v2From, w.metaWritten = n, true
	}
	return nil
}

// recordOnce stores a seq in store_meta unless a value is there already,
// and returns the stored value.
func (w *writerState) recordOnce(ctx context.Context, key string, seq int64) (int64, error) {
	var v string
	if err := w.exec(ctx, `INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`, key, strconv.FormatInt(seq, 10)); err != nil {
		return 0, storageErr("record "+key, err)
	}
	if err := w.conn.QueryRowContext(ctx, w.s.rebind(`SELECT value FROM store_meta WHERE key = ?`), key).Scan(&v); err != nil {
		return 0, storageErr("record "+key, err)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("eventlog: store_meta %s is %q, not a seq", key, v)
	}
	return n, nil
}

// beginTx begins the write transaction on the writer's connection. Its
// context is the writer's lifetime, never a request's: database/sql rolls
// a transaction back when its context ends.
func (w *writerState) beginTx(ctx context.Context) error {
	var tx *sql.Tx
	var err error
	if w.gate != nil {
		tx, err = w.beginGated()
	} else {
		tx, err = w.conn.BeginTx(context.Background(), nil)
	}
	if err != nil {
		return err
	}
	w.tx, w.inTx = tx, true
	return nil
}
