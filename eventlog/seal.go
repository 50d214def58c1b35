package eventlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/keyring"
)

// Sealing (docs/SECURITY.md, "Sealed content"): with a Sealer, every
// payload and blob an append writes is sealed under the data key of the
// append's subject (package keyring) after the Redactor ran and before
// the leaf is computed, so the leaf, the tree and every checkpoint commit
// to the ciphertext and verify needs no key. Projectors and the append's
// caller still see the plaintext. Reads open what is sealed; content of
// an erased subject reads as events.ErasedMarker (Event.Redacted set).
//
// Whose content an append is: the subject its context names
// (events.ContextWithSubject; rath.WithSubject), else the run's
// own ("run:ID"); outside any run, a memory stream's namespace
// ("memory:NS") and any other stream's own ("session:STREAM").
//
// A blob keeps the address of its plaintext, which the payloads name, so
// its bytes no longer hash to it: verify checks a sealed blob against its
// address only when it holds the key. Identical bytes appended by two
// subjects are stored once per subject: the row's key is the address, a
// dot and the subject's key id (sealedBlobKey), so erasing one subject
// leaves the other's copy readable, and a subject given a new key after
// an erasure stores its bytes again. Readers find every copy of an
// address (blobCopies) and open the first whose key exists.

// Sealer seals and opens content under subjects' keys. *keyring.Keyring
// implements it.
type Sealer interface {
	// Create makes subject's key in q, a transaction the store commits.
	Create(ctx context.Context, q keyring.Querier, subject string) (*keyring.DataKey, error)
	// Key returns subject's key (keyring.ErrErased when it has none).
	Key(ctx context.Context, q keyring.Querier, subject string) (*keyring.DataKey, error)
	// FindOrCreate returns subject's key, making it if it has none, in
	// one statement through a pool (PostgreSQL only).
	FindOrCreate(ctx context.Context, q keyring.Querier, subject string) (*keyring.DataKey, error)
	// Cached returns subject's key if the cache holds it and may trust
	// it, without a query; nil otherwise.
	Cached(subject string) *keyring.DataKey
	// Open opens a sealed payload or blob bound to binding.
	Open(ctx context.Context, q keyring.Querier, sealed, binding []byte) ([]byte, error)
	// OpenKey is Open that returns the key it opened with.
	OpenKey(ctx context.Context, q keyring.Querier, sealed, binding []byte) ([]byte, *keyring.DataKey, error)
	// KeyByID returns subject's key of that id (keyring.ErrErased once
	// it was destroyed).
	KeyByID(ctx context.Context, q keyring.Querier, subject, id string) (*keyring.DataKey, error)
	// Epoch changes whenever an erasure (by any process) may have made
	// cached keys stale.
	Epoch(ctx context.Context, q keyring.Querier) (uint64, error)
	// Forget drops subject's cached key: the append's transaction found
	// it erased (sealcheck.go).
	Forget(subject string)
}

var _ Sealer = (*keyring.Keyring)(nil)

// unsealed are the streams whose events stay in clear: the evidence
// verify reads without any key, which holds no one's content.
var unsealed = map[string]bool{events.StreamEvidence: true, events.StreamRedactions: true}

// unsealedTypes are event types that stay in clear wherever they are:
// fleet bookkeeping and scores, which verify and the fleet read
// without keys.
var unsealedTypes = map[string]bool{events.TypeRunLeased: true, events.TypeRunResumed: true, events.TypeScoreRecorded: true}

// payloadBinding binds a sealed payload to its event's stream and type.
func payloadBinding(stream, typ string) []byte {
	return appendPayloadBinding(nil, stream, typ)
}

// appendPayloadBinding appends payloadBinding(stream, typ) to b.
func appendPayloadBinding(b []byte, stream, typ string) []byte {
	b = append(b, "event\x00"...)
	b = append(b, stream...)
	b = append(b, 0)
	return append(b, typ...)
}

// blobBinding binds a sealed blob to its address.
func blobBinding(hash string) []byte { return []byte("blob\x00" + hash) }

// blobAddressLen is the length of a blob's address, the hex SHA-256 of
// its plaintext.
const blobAddressLen = 64

// sealedBlobKey is the row key of a blob sealed under the key keyID.
func sealedBlobKey(hash, keyID string) string { return hash + "." + keyID }

// blobAddress is the address a blob row's key names: the key itself
// for a blob in clear or one sealed before copies per subject.
func blobAddress(key string) string {
	if len(key) > blobAddressLen && key[blobAddressLen] == '.' {
		return key[:blobAddressLen]
	}
	return key
}

// subjectOf is whose content an append to stream with ctx, of run
// (none if empty), is.
func subjectOf(ctx context.Context, run, stream string) string {
	if s := events.SubjectFromContext(ctx); s != "" {
		return s
	}
	if run != "" {
		return keyring.LevelRun + ":" + run
	}
	if ns, ok := strings.CutPrefix(stream, events.MemoryStream("")); ok && ns != "" {
		return keyring.LevelMemory + ":" + ns
	}
	return keyring.LevelSession + ":" + stream
}

// sealRequest seals the request's payloads and blobs under their
// subjects' keys, making a key (in a transaction of its own, committed
// before the content) for a subject that has none.
func (s *Store) sealRequest(ctx context.Context, req *request) error {
	if s.opts.Sealer == nil {
		return nil
	}
	// A request's writes mostly share one subject: the last key found
	// is kept, and another is looked up (the keyring caches it).
	var dk *keyring.DataKey
	// A payload's binding is its stream and type: room for most of them
	// without an allocation.
	var bindingBuf [128]byte
	binding := bindingBuf[:0]
	for wi := range req.writes {
		w := &req.writes[wi]
		if unsealed[w.stream] {
			continue
		}
		if subject := subjectOf(ctx, req.runID, w.stream); dk == nil || dk.Subject != subject {
			var err error
			if dk, err = s.arrivingKey(ctx, req, subject); err != nil {
				return err
			}
		}
		w.key = dk
		if len(w.blobs) > 0 {
			w.sealedBlobs, w.blobKeys = make([][]byte, len(w.blobs)), make([]string, len(w.blobs))
			for bi, b := range w.blobs {
				hash := BlobHash(b)
				sb, err := keyring.Seal(dk, blobBinding(hash), b)
				if err != nil {
					return err
				}
				w.sealedBlobs[bi], w.blobKeys[bi] = sb, sealedBlobKey(hash, dk.ID)
			}
		}
		for ii := range w.items {
			it := &w.items[ii]
			if unsealedTypes[it.typ] {
				continue
			}
			binding = appendPayloadBinding(binding[:0], w.stream, it.typ)
			sp, err := keyring.Seal(dk, binding, it.payload)
			if err != nil {
				return err
			}
			it.sealed = sp
		}
	}
	return nil
}

// arrivingKey is subjectKey for req. A key the keyring must read or make
// takes a round trip on the keyring's pool, during which req is not
// counted as arriving: the writer does not wait for it (loop.go).
func (s *Store) arrivingKey(ctx context.Context, req *request, subject string) (*keyring.DataKey, error) {
	if dk := s.opts.Sealer.Cached(subject); dk != nil {
		return dk, nil
	}
	if !req.arriving {
		return s.subjectKey(ctx, subject)
	}
	s.inflight.Add(-1)
	defer s.inflight.Add(1)
	return s.subjectKey(ctx, subject)
}

// subjectKey returns subject's data key, making it if it has none.
func (s *Store) subjectKey(ctx context.Context, subject string) (*keyring.DataKey, error) {
	if err := keyring.ValidSubject(subject); err != nil {
		return nil, invalid("append: %v", err)
	}
	if s.d.keysOutsideWriter() {
		// Every run and session makes a key: one statement on the
		// keyring's pool finds it or makes it, committed before the
		// content it seals (made on the writer, it held the chain lock
		// across its round trips).
		dk, err := s.opts.Sealer.FindOrCreate(ctx, s.kdb, subject)
		if err != nil {
			return nil, fmt.Errorf("events: find or make the key of %s: %w", subject, err)
		}
		return dk, nil
	}
	dk, err := s.opts.Sealer.Key(ctx, s.kdb, subject)
	if !errors.Is(err, keyring.ErrErased) {
		return dk, err
	}
	err = s.Exclusive(ctx, func(ctx context.Context, tx *Tx) error {
		_, err := s.opts.Sealer.Create(ctx, txQuerier{tx}, subject)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("events: make the key of %s: %w", subject, err)
	}
	return s.opts.Sealer.Key(ctx, s.kdb, subject)
}

// keyConns is the size of the keyring's pool: keys are cached, and a
// read holds a connection for one statement.
const keyConns = 2

// txQuerier lets the keyring write through the writer's transaction.
type txQuerier struct{ tx *Tx }

func (q txQuerier) ExecContext(_ context.Context, query string, args ...any) (sql.Result, error) {
	return q.tx.Exec(query, args...)
}

func (q txQuerier) QueryRowContext(_ context.Context, query string, args ...any) *sql.Row {
	return q.tx.sqlRow(query, args...)
}

// openPayload returns the plaintext of a stored payload (after a blob
// pointer was followed), and whether its subject was erased: then the
// payload is events.ErasedMarker. A payload that is not sealed is
// returned as is. under is the key an open payload was sealed under.
func (s *Store) openPayload(ctx context.Context, seq int64, stream, typ string, payload []byte) (_ []byte, erased bool, under events.SealKey, _ error) {
	if !keyring.IsSealed(payload) {
		return payload, false, under, nil
	}
	if s.opts.Sealer == nil {
		return nil, false, under, fmt.Errorf("events: seq %d is sealed and the store has no key-encryption key: %w", seq, keyring.ErrKEK)
	}
	pt, dk, err := s.opts.Sealer.OpenKey(ctx, s.kdb, payload, payloadBinding(stream, typ))
	if errors.Is(err, keyring.ErrErased) {
		return []byte(events.ErasedMarker), true, under, nil
	}
	if err != nil {
		return nil, false, under, fmt.Errorf("events: seq %d: %w", seq, err)
	}
	return pt, false, events.SealKey{Subject: dk.Subject, ID: dk.ID}, nil
}

// OpenStored returns the plaintext of a payload as an events row of
// stream and typ stores it (a blob pointer already followed): a sealed
// one opens under its subject's key, and erased is true, with
// events.ErasedMarker, once that key is gone. Anything else is returned
// as is. Readers of raw rows (package projections) call it.
func (s *Store) OpenStored(ctx context.Context, seq int64, stream, typ string, payload []byte) (_ []byte, erased bool, _ error) {
	pt, erased, _, err := s.openPayload(ctx, seq, stream, typ, payload)
	return pt, erased, err
}

// openBlob returns the plaintext of a blob stored under hash: a sealed
// blob opens under its subject's key (keyring.ErrErased once erased).
func (s *Store) openBlob(ctx context.Context, hash string, b []byte) ([]byte, error) {
	if !keyring.IsSealed(b) {
		return b, nil
	}
	if s.opts.Sealer == nil {
		return nil, fmt.Errorf("events: blob %s is sealed and the store has no key-encryption key: %w", hash, keyring.ErrKEK)
	}
	pt, err := s.opts.Sealer.Open(ctx, s.kdb, b, blobBinding(hash))
	if err != nil {
		return nil, fmt.Errorf("events: blob %s: %w", hash, err)
	}
	return pt, nil
}

// KeyEpoch returns a number that changes whenever an erasure, by this
// process or another (seen within keyring.Freshness), may have made
// content unreadable: a holder of opened content in memory drops it then.
// It is 0 for a store that seals nothing.
func (s *Store) KeyEpoch(ctx context.Context) (uint64, error) {
	if s.opts.Sealer == nil {
		return 0, nil
	}
	e, err := s.opts.Sealer.Epoch(ctx, s.kdb)
	if err != nil {
		return 0, fmt.Errorf("eventlog: %w", err)
	}
	return e, nil
}

// Sealed reports whether the store seals what it writes.
func (s *Store) Sealed() bool { return s.opts.Sealer != nil }

// unsealBlob checks a blob that does not hash to its address: a sealed
// blob opens, with the store's key, to bytes that do. It returns the
// plaintext, or nil when the blob could not be opened (no key, or its
// subject was erased: counted in Unopened), and a failure reason.
func (v *verifier) unsealBlob(ctx context.Context, hash string, b []byte) (pt []byte, fail string, err error) {
	if !keyring.IsSealed(b) {
		return nil, "content does not match its hash", nil
	}
	if v.s.opts.Sealer == nil {
		v.rep.Unopened++
		return nil, "", nil
	}
	pt, err = v.s.opts.Sealer.Open(ctx, v.tx, b, blobBinding(hash))
	switch {
	case errors.Is(err, keyring.ErrErased):
		v.rep.Unopened++
		return nil, "", nil
	case errors.Is(err, keyring.ErrSealed):
		return nil, "sealed content does not open: it was altered or moved", nil
	case err != nil:
		return nil, "", fmt.Errorf("events: verify blob %s: %w", hash, err)
	case BlobHash(pt) != hash:
		return nil, "sealed content does not match its hash", nil
	}
	return pt, "", nil
}

// unsealPayload opens a sealed payload for verify's reference checks: nil
// when it cannot (no key, or erased; counted in Unopened).
func (v *verifier) unsealPayload(ctx context.Context, r row, payload []byte) (pt []byte, fail string, err error) {
	if v.s.opts.Sealer == nil {
		v.rep.Unopened++
		return nil, "", nil
	}
	pt, err = v.s.opts.Sealer.Open(ctx, v.tx, payload, payloadBinding(r.Stream, r.Type))
	switch {
	case errors.Is(err, keyring.ErrErased):
		v.rep.Unopened++
		return nil, "", nil
	case errors.Is(err, keyring.ErrSealed):
		return nil, "sealed payload does not open: it was altered or moved", nil
	case err != nil:
		return nil, "", fmt.Errorf("events: verify seq %d: %w", r.Seq, err)
	}
	return pt, "", nil
}
