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
// commit before the append does. PostgreSQL reads the key's row FOR
// SHARE: an erasure's DELETE of it waits for the append to commit (the
// content is then erased with the rest), or the read waits for the
// erasure and finds no row.

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

// checkKeys fails req with a *keyGoneError when a key one of its writes
// was sealed under is no longer in subject_keys. It runs in the append's
// transaction.
func (w *writerState) checkKeys(ctx context.Context, req *request) error {
	query := w.s.d.readShared(selectKeyID)
	var checked map[*keyring.DataKey]bool
	for _, pw := range req.writes {
		if pw.key == nil || checked[pw.key] {
			continue
		}
		var id string
		var err error
		if w.pend.unsent() > 0 {
			// After the statements queued before it, in their round trip.
			err = w.queryRowAfterQueued(ctx, query, []any{pw.key.Subject}, &id)
			if errors.Is(err, errQueuedFailed) {
				return storageErr("check the sealing key", err)
			}
		} else {
			err = w.conn.QueryRowContext(ctx, w.s.rebind(query), pw.key.Subject).Scan(&id)
		}
		switch {
		case errors.Is(err, sql.ErrNoRows) || (err == nil && id != pw.key.ID):
			return &keyGoneError{Subject: pw.key.Subject, KeyID: pw.key.ID}
		case err != nil:
			return storageErr("check the sealing key", err)
		}
		if checked == nil {
			checked = map[*keyring.DataKey]bool{}
		}
		checked[pw.key] = true
	}
	return nil
}
