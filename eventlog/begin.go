package eventlog

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
)

// begin opens an IMMEDIATE transaction (taking SQLite's write lock up
// front, so no read-to-write upgrade can fail with SQLITE_BUSY) and
// refreshes caches if another connection committed since our last look.
// For appends it refuses a key that does not match the
// chain's, and records the chain's key fingerprint and hash format with
// the first write; Exclusive's transactions (rebuilds) touch no event and
// need neither. batch is the group commit the transaction is for (nil for
// Exclusive and the tree's build): on PostgreSQL what it will look up is
// read with the lock, and its BEGIN goes in the lock's pipeline unless it
// holds AppendTx work.
func (w *writerState) begin(ctx context.Context, appends bool, batch []*request) error {
	if w.s.pg {
		if err := w.beginPostgres(ctx, batch); err != nil {
			return err
		}
	} else if err := w.beginTx(ctx); err != nil { // IMMEDIATE: the DSN's _txlock
		return storageErr("begin", err)
	}
	if !w.s.pg && (!w.s.opts.InMemory || w.dataVersion < 0) {
		// Only this process can write an in-memory database, so its
		// caches go stale only after a failure.
		var dv int64
		if err := w.conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&dv); err != nil {
			w.rollback()
			return storageErr("data_version", err)
		}
		if dv != w.dataVersion {
			if err := w.reload(ctx, true); err != nil {
				w.rollback()
				return err
			}
		}
	}
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

// beginPostgres opens a transaction holding the chain lock (the one row
// of chain_lock, locked FOR UPDATE until commit), so one writer in any
// process appends at a time and seqs are handed out in commit order. The
// tail read after the lock sees the previous holder's commit; if it is not
// the one cached, another process wrote and the caches are reloaded.
func (w *writerState) beginPostgres(ctx context.Context, batch []*request) error {
	pf := w.prefetchFor(batch)
	if w.mayBeginOptimistically(batch, pf) {
		// Nothing is sent now: run queues BEGIN, the lock and the check
		// ahead of the batch's statements (optimistic.go).
		w.opt.open, w.inTx = true, true
		return nil
	}
	// An idle connection the server dropped (a restart, a failover,
	// pg_terminate_backend) fails its first statement: nothing has been
	// done yet, so dial again and retry once.
	// A batch without AppendTx work sends its BEGIN with the lock and
	// the reads (pipelinedtx.go); the fault hook takes the lock alone.
	pipelined := !needsSQLTx(batch) && !w.s.stopHoldingLock
	for attempt := 0; !pipelined; attempt++ {
		if err := w.connect(ctx); err != nil {
			return err
		}
		err := w.beginTx(ctx)
		if err == nil {
			break
		}
		w.disconnect()
		if attempt == 1 {
			return storageErr("begin", err)
		}
	}
	if w.s.stopHoldingLock {
		// The fault needs the lock taken before the tail is read.
		var one int
		if err := w.conn.QueryRowContext(ctx, `SELECT id FROM chain_lock WHERE id = 1 FOR UPDATE`).Scan(&one); err != nil {
			w.rollback()
			w.disconnect()
			return storageErr("lock the chain", err)
		}
		w.s.stopHoldingLock = false
		stopUntilContinued()
	}
	// Rows after the cached tail are read too unless the caches are to
	// be reloaded anyway.
	after := w.lastSeq
	if w.dataVersion < 0 || w.s.opts.chainRows {
		after = -1
	}
	var c caughtUp
	var lockErr, err error
	for attempt := 0; ; attempt++ {
		if err := w.connect(ctx); err != nil {
			return err
		}
		var beginErr error
		c, beginErr, lockErr, err = lockAndCatchUp(ctx, w.conn, pipelined, after, pf)
		if beginErr == nil {
			break
		}
		w.disconnect()
		if attempt == 1 {
			return storageErr("begin", beginErr)
		}
		// The connection was replaced: every cache is to be read again.
		after = -1
	}
	if pipelined {
		w.inTx = true
	}
	if lockErr != nil {
		w.rollback()
		w.disconnect()
		return storageErr("lock the chain", lockErr)
	}
	if err != nil {
		w.rollback()
		w.disconnect()
		return storageErr("read chain tail", err)
	}
	current := c.seq == w.lastSeq && hashText(c.hash) == w.lastHash && w.dataVersion >= 0
	w.beganUsually(current)
	if !current && !(after >= 0 && w.catchUp(c)) {
		if err := w.reload(ctx, true); err != nil {
			w.rollback()
			return err
		}
	}
	w.usePrefetched(c)
	return nil
}

// writeMeta records, in the open transaction, what the chain's next
// events are hashed with: the key's fingerprint (replaced while the chain
// is still empty, so the first event's writer decides) and, once, the
// first seq hashed with hashFormat2.
func (w *writerState) writeMeta(ctx context.Context) error {
	want := keyFingerprint(w.s.opts.HMACKey)
	if w.fingerprint != want && w.lastSeq == 0 || w.fingerprint == "" {
		if err := w.exec(ctx, `INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, metaKeyFingerprint, want); err != nil {
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
		return 0, fmt.Errorf("events: store_meta %s is %q, not a seq", key, v)
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
