package eventlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/keyring"
)

// An erasure may commit between the moment an append sealed its content
// (under a key read from the keyring's cache, which trusts itself for up
// to keyring.Freshness, or read just before) and the append's commit.
// Content committed then would be sealed under a destroyed key: written,
// hashed and proven, yet unreadable by anyone, a loss nobody asked for.
// So the append's transaction checks that every key it sealed under is
// still in subject_keys, and a request whose key is gone is sealed again
// under the subject's new key and sent again (sendSealed): a run of a
// subject erased while it runs goes on under a new key, and what it
// writes after the erasure reads back.
//
// SQLite has one writer at a time, so a plain read inside the append's
// transaction sees every erasure that committed before it, and none can
// commit before the append does. On PostgreSQL an erasure deletes the key
// under the chain lock (it is an AppendTx, which locks at BEGIN), so
// once an append holds the lock no erasure commits before it does: a
// transaction that locks at BEGIN reads the key's row (FOR SHARE, which
// the lock makes redundant but which keeps the check right by itself),
// and one sequenced at its end (sequencer.go) reads nothing before the
// lock, which would send its BEGIN and lock mid-batch and hold the lock
// across a round trip: it checks the erasure generation in the lock
// statement itself (confirmGeneration), and queues keyConfirm for a key
// not confirmed at that generation, which runs after the lock in the
// batch's final pipeline; either fails the batch if the key may be gone.
// The batch is then redone the usual way, where the read finds the key
// gone and the request is sealed again.

// errKeyGone is matched by a *keyGoneError.
var errKeyGone = errors.New("eventlog: a key the append was sealed under was erased meanwhile")

// keyGoneError says that Subject's key KeyID, which a request was sealed
// under, was erased before the request committed. Nothing of the
// request was written.
type keyGoneError struct {
	Subject, KeyID string
}

func (e *keyGoneError) Error() string {
	return fmt.Sprintf("eventlog: the key of subject %q was erased while an append was sealed under it", e.Subject)
}

// Is makes errors.Is(err, keyring.ErrErased) true: once the resends are
// spent, the caller learns that the subject was erased.
func (e *keyGoneError) Is(target error) bool {
	return target == errKeyGone || target == keyring.ErrErased
}

// maxReseals bounds how many times one request is sealed again because
// its subject was erased meanwhile: each needs another erasure of the
// same subject between a seal and its commit.
const maxReseals = 3

// sendSealed seals req and sends it to the writer, sealing again under
// the subject's current key (a new one if it has none) when the writer
// found a key gone.
func (s *Store) sendSealed(ctx context.Context, req *request) ([]events.Event, error) {
	for attempt := 0; ; attempt++ {
		if err := s.sealRequest(ctx, req); err != nil {
			return nil, err
		}
		stored, err := s.send(ctx, req)
		var gone *keyGoneError
		if !errors.As(err, &gone) || attempt == maxReseals {
			return stored, err
		}
		s.opts.Sealer.Forget(gone.Subject)
	}
}

const selectKeyID = `SELECT key_id FROM subject_keys WHERE subject = ?`

// selectGeneration reads the erasure generation (keyring.GenerationKey),
// "" before the first erasure.
const selectGeneration = `SELECT COALESCE((SELECT value FROM store_meta WHERE key = '` + keyring.GenerationKey + `'), '')`

// keyConfirm fails (dividing by zero) unless subject's key is key_id
// (PostgreSQL only: a late transaction's queued check).
const keyConfirm = `SELECT 1 / count(*)::int FROM subject_keys WHERE subject = $1 AND key_id = $2`

// generationConfirm fails (dividing by zero) unless the erasure
// generation is $1 (PostgreSQL only: a late transaction's queued check
// for keys confirmed at that generation).
const generationConfirm = `SELECT 1 / (CASE WHEN (` + selectGeneration + `) = $1 THEN 1 ELSE 0 END)`

// lockConfirmingGeneration is lockStatement that also fails (dividing
// by zero) unless the erasure generation is $1. The generation is kept
// in the lock's row as well (migration 00025), and a statement that
// waited for the row's lock reads the row as its last holder committed
// it, so an erasure that committed while the append waited is seen.
const lockConfirmingGeneration = `SELECT seq, set_config('rath.seq_base', seq::text, true) FROM chain_lock WHERE id = 1 AND 1 / (CASE WHEN erase_generation = $1 THEN 1 ELSE 0 END) = 1 FOR UPDATE`

// confirmGeneration has the open late transaction check at its lock that
// the erasure generation is still gen: the lock statement checks it when
// it has not been sent yet (almost always: it goes with the batch's last
// pipeline), and a statement of its own after the lock otherwise.
func (w *writerState) confirmGeneration(gen string) {
	if w.pend.sent < leadingStatements && len(w.pend.queued) >= leadingStatements {
		// A request rolled back may have made it the confirming one
		// already; the generation is the same.
		if lock := &w.pend.queued[leadingStatements-1]; lock.query == lockStatement || lock.query == lockConfirmingGeneration {
			lock.query, lock.args = lockConfirmingGeneration, []any{gen}
			return
		}
	}
	w.pend.queued = append(w.pend.queued, queuedStmt{query: generationConfirm, args: []any{gen}})
}

// confirmedKeys remembers which keys the writer found in subject_keys,
// and at which erasure generation: every erasure rewrites the generation
// in its transaction, so while it holds the same value those keys are
// all still there, and a transaction checks them with one read of the
// generation instead of one read a key. A generation that moved drops
// them all.
type confirmedKeys struct {
	known bool   // gen was read
	gen   string // the generation the ids were confirmed at
	ids   map[string]bool
	// fresh is set once the generation is read, until another
	// connection may have committed: on SQLite until begin finds one did
	// (data_version), on PostgreSQL until the transaction ends.
	// queuedInTx is set once a late transaction queued
	// generationConfirm, and pending are the keys it confirmed with it,
	// known once it commits (confirmLate).
	fresh, queuedInTx bool
	pending           map[string]bool
}

// confirmLate records, once a late transaction committed, the keys it
// confirmed at the generation it confirmed too.
func (c *confirmedKeys) confirmLate() {
	if c.known {
		for id := range c.pending {
			c.confirm(id)
		}
	}
	c.endTx()
}

// endTx forgets what the open transaction queued: begin calls it, and so
// does a request's rollback, whose dropped statements a later request
// queues again.
func (c *confirmedKeys) endTx() {
	c.queuedInTx = false
	clear(c.pending)
}

// confirm records that key id is in subject_keys at generation c.gen.
func (c *confirmedKeys) confirm(id string) {
	if len(c.ids) >= maxHeadCache {
		c.ids = map[string]bool{} // bounded like the heads' cache
	}
	c.ids[id] = true
}

// checkKeys fails req with a *keyGoneError when a key one of its writes
// was sealed under is no longer in subject_keys. It runs in the append's
// transaction: it reads the generation once a transaction (on SQLite,
// once another connection committed) and a key only when the generation
// moved since the key was last found. In one sequenced at its end it only
// queues checks: the generation's once (confirmGeneration), and
// keyConfirm once for each key not confirmed before.
func (w *writerState) checkKeys(ctx context.Context, req *request) error {
	c := &w.keys
	for _, pw := range req.writes {
		if pw.key == nil {
			continue
		}
		if w.opt.open {
			if !c.known {
				// Learned once, outside the transaction: the queued
				// generationConfirm checks at commit that it still holds,
				// so the keys this transaction confirms stay confirmed at
				// it and later transactions queue no keyConfirm for them.
				var gen string
				if err := w.s.rdb.QueryRowContext(ctx, selectGeneration).Scan(&gen); err != nil {
					return storageErr("check the sealing keys", err)
				}
				c.known, c.gen, c.ids = true, gen, map[string]bool{}
			}
			if !c.queuedInTx {
				w.confirmGeneration(c.gen)
				c.queuedInTx = true
			}
			if c.ids[pw.key.ID] || c.pending[pw.key.ID] {
				continue
			}
			w.pend.queued = append(w.pend.queued, queuedStmt{query: keyConfirm, args: []any{pw.key.Subject, pw.key.ID}})
			// Confirmed after the lock, with the generation: once the
			// transaction commits, known at that generation.
			if c.pending == nil {
				c.pending = map[string]bool{}
			}
			c.pending[pw.key.ID] = true
			continue
		}
		if !c.fresh {
			var gen string
			if err := w.queryRow(ctx, selectGeneration, nil, &gen); err != nil {
				return storageErr("check the sealing keys", err)
			}
			if !c.known || gen != c.gen {
				c.known, c.gen, c.ids = true, gen, map[string]bool{}
			}
			c.fresh = true
		}
		if c.ids[pw.key.ID] {
			continue
		}
		var id string
		err := w.queryRow(ctx, w.s.d.readShared(selectKeyID), []any{pw.key.Subject}, &id)
		switch {
		case errors.Is(err, sql.ErrNoRows) || (err == nil && id != pw.key.ID):
			return &keyGoneError{Subject: pw.key.Subject, KeyID: pw.key.ID}
		case err != nil:
			return storageErr("check the sealing key", err)
		}
		c.confirm(pw.key.ID)
	}
	return nil
}
