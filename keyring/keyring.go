package keyring

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Querier is what the keyring reads and writes subject_keys through: a
// *sql.DB, *sql.Tx or *sql.Conn (or sqlx's).
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Keyring makes, finds, caches and erases subjects' data keys, wrapped by
// one KEK. It is safe for concurrent use.
type Keyring struct {
	kek    KEK
	rebind func(string) string
	now    func() time.Time

	mu    sync.RWMutex        // protects keys and gone, and orders epoch's bumps
	keys  map[string]*DataKey // by subject, as last read from subject_keys
	epoch atomic.Uint64       // bumped each time keys is dropped for an erasure
	// gone holds keys found destroyed (goneKey): a key id is random and
	// content is sealed under a key only once it is stored, so a key
	// that content names and the table lacks never comes back. Reading
	// an erased subject's content then costs no query per payload.
	gone map[string]bool

	gen struct {
		sync.Mutex
		value string // the generation last read
		// fresh is when that read started plus Freshness, in Unix ns
		// (zero: never read): before it, callers answer from the cache,
		// without the lock, which every append's seal would otherwise
		// take.
		fresh atomic.Int64
		// reading, while one caller reads the row, is closed when it is
		// done: the callers meanwhile wait for it instead of reading too.
		reading chan struct{}
	}
}

// New returns a keyring wrapping keys with kek. rebind turns a query's ?
// placeholders into the database's (nil leaves them: SQLite's).
func New(kek KEK, rebind func(string) string) *Keyring {
	if rebind == nil {
		rebind = func(q string) string { return q }
	}
	return &Keyring{kek: kek, rebind: rebind, now: time.Now, keys: map[string]*DataKey{}, gone: map[string]bool{}}
}

// KEK returns the key-encryption key.
func (k *Keyring) KEK() KEK { return k.kek }

// Create makes subject's data key in q (a transaction, which the caller
// commits) unless it has one, and returns the key stored. It caches
// nothing: a rolled-back transaction must leave no key behind, so the
// cache fills from Key, after the commit.
func (k *Keyring) Create(ctx context.Context, q Querier, subject string) (*DataKey, error) {
	if err := ValidSubject(subject); err != nil {
		return nil, err
	}
	raw, id, wrapped, err := k.newKey(subject)
	if err != nil {
		return nil, err
	}
	// The row comes back only when this insert made it: then the key is
	// the one in hand, and reading it back would cost a round trip on
	// every new run and session of a sealed store.
	var made string
	err = q.QueryRowContext(ctx, k.rebind(`INSERT INTO subject_keys (subject, key_id, wrapped, kek_id, created_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (subject) DO NOTHING RETURNING key_id`),
		subject, id, wrapped, k.kek.ID(), k.now().UnixNano()).Scan(&made)
	switch {
	case errors.Is(err, sql.ErrNoRows): // the subject had a key
		return k.read(ctx, q, subject)
	case err != nil:
		return nil, fmt.Errorf("keyring: create key of %s: %w", subject, err)
	}
	return k.dataKey(subject, made, raw)
}

// newKey makes a data key for subject: its raw bytes, a random id and
// its form wrapped by the KEK.
func (k *Keyring) newKey(subject string) (raw []byte, id string, wrapped []byte, err error) {
	raw = make([]byte, 32)
	idBytes := make([]byte, 12)
	if _, err := rand.Read(raw); err != nil {
		return nil, "", nil, fmt.Errorf("keyring: create key: %w", err)
	}
	if _, err := rand.Read(idBytes); err != nil {
		return nil, "", nil, fmt.Errorf("keyring: create key: %w", err)
	}
	if wrapped, err = k.kek.Wrap(raw); err != nil {
		return nil, "", nil, fmt.Errorf("keyring: create key of %s: %w", subject, err)
	}
	return raw, hex.EncodeToString(idBytes), wrapped, nil
}

// findOrCreate inserts a subject's new key unless it has one, and returns
// the key the subject has after it: the one inserted, or the one found
// (in the statement's snapshot). PostgreSQL only: SQLite has no
// data-modifying WITH.
const findOrCreate = `WITH made AS (
	INSERT INTO subject_keys (subject, key_id, wrapped, kek_id, created_at)
	VALUES (?, ?, ?, ?, ?) ON CONFLICT (subject) DO NOTHING
	RETURNING key_id, wrapped, kek_id
)
SELECT key_id, wrapped, kek_id FROM made
UNION ALL
SELECT key_id, wrapped, kek_id FROM subject_keys WHERE subject = ? AND NOT EXISTS (SELECT 1 FROM made)`

// FindOrCreate returns subject's key from the cache, or else finds it or
// makes it in one statement, through a q in which each statement commits
// at once (a pool), and caches it. It is PostgreSQL's: its statement is a
// data-modifying WITH, which SQLite lacks. A sealed store on PostgreSQL
// finds every key its cache lacks so: a lookup that missed and then an
// insert took two round trips for every new run and session.
func (k *Keyring) FindOrCreate(ctx context.Context, q Querier, subject string) (*DataKey, error) {
	if err := ValidSubject(subject); err != nil {
		return nil, err
	}
	dk, epoch, err := k.fromCache(ctx, q, subject)
	if err != nil || dk != nil {
		return dk, err
	}
	raw, id, wrapped, err := k.newKey(subject)
	if err != nil {
		return nil, err
	}
	var gotID, kekID string
	var gotWrapped []byte
	err = q.QueryRowContext(ctx, k.rebind(findOrCreate), subject, id, wrapped, k.kek.ID(), k.now().UnixNano(), subject).
		Scan(&gotID, &gotWrapped, &kekID)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// Another process made the key after the statement's snapshot
		// was taken: it is committed by now.
		dk, err = k.read(ctx, q, subject)
	case err != nil:
		return nil, fmt.Errorf("keyring: find or create key of %s: %w", subject, err)
	case gotID == id:
		dk, err = k.dataKey(subject, id, raw)
	default:
		dk, err = k.unwrap(subject, gotID, gotWrapped, kekID)
	}
	if err != nil {
		return nil, err
	}
	k.cache(subject, dk, epoch)
	return dk, nil
}

// fromCache returns subject's cached key (nil if none) after the
// erasure generation's check (Epoch), and the epoch it checked at.
func (k *Keyring) fromCache(ctx context.Context, q Querier, subject string) (*DataKey, uint64, error) {
	epoch, err := k.Epoch(ctx, q)
	if err != nil {
		return nil, 0, err
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.keys[subject], epoch, nil
}

// cache keeps dk as subject's key unless the cache was dropped for an
// erasure since epoch: a key read or made before it must not enter the
// cache, as nothing would drop it again.
func (k *Keyring) cache(subject string, dk *DataKey, epoch uint64) {
	k.mu.Lock()
	if k.epoch.Load() == epoch {
		k.keys[subject] = dk
	}
	k.mu.Unlock()
}

// Key returns subject's data key, from the cache or q. A subject with no
// key (erased, or never given one) is an *ErasedError (ErrErased); a key
// wrapped by another KEK is a *KEKError (ErrKEK). A key another process
// erased leaves the cache within Freshness (see Epoch).
func (k *Keyring) Key(ctx context.Context, q Querier, subject string) (*DataKey, error) {
	dk, epoch, err := k.fromCache(ctx, q, subject)
	if err != nil || dk != nil {
		return dk, err
	}
	dk, err = k.read(ctx, q, subject)
	if err != nil {
		return nil, err
	}
	k.cache(subject, dk, epoch)
	return dk, nil
}

// Cached returns subject's key if the cache holds it and may still trust
// it (within Freshness of the last read of the erasure generation), and
// nil otherwise, without a query or a wait: Key answers the rest. An
// appender asks it first so that a key it must read is a step the
// writer knows not to wait for.
func (k *Keyring) Cached(subject string) *DataKey {
	if k.now().UnixNano() >= k.gen.fresh.Load() {
		return nil
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.keys[subject]
}

// Freshness bounds how long a process trusts its cached keys without
// asking the store whether a key was erased: every erasure rewrites the
// generation row of store_meta in its transaction, and a keyring reads
// that row at most once per Freshness, dropping every cached key when it
// changed. A caller that must know no process still opens an erased
// subject's content (rath erase) waits Freshness after the commit.
const Freshness = 100 * time.Millisecond

// metaGeneration is the store_meta row every erasure rewrites with a
// new random value.
const metaGeneration = GenerationKey

// GenerationKey is the key of the store_meta row every erasure rewrites
// in its transaction with a new random value: a reader that found a key
// in subject_keys while the row held a value knows the key is still
// there while the row still holds it.
const GenerationKey = "keyring_generation"

// Epoch returns a number that changes each time this keyring drops its
// cached keys because a key was erased, by this process or by another
// (seen within Freshness). A holder of plaintext in memory (a session's
// chunks) drops it when the epoch changes. It reads the generation row
// through q at most once per Freshness.
func (k *Keyring) Epoch(ctx context.Context, q Querier) (uint64, error) {
	for {
		now := k.now()
		if now.UnixNano() < k.gen.fresh.Load() {
			return k.epoch.Load(), nil
		}
		k.gen.Lock()
		if now.UnixNano() < k.gen.fresh.Load() {
			k.gen.Unlock()
			return k.currentEpoch(), nil
		}
		reading := k.gen.reading
		if reading == nil {
			// This caller reads; appenders arriving meanwhile wait for
			// its answer, so the row is read once per Freshness, not once
			// per goroutine.
			k.gen.reading = make(chan struct{})
			k.gen.Unlock()
			return k.readGeneration(ctx, q, now)
		}
		k.gen.Unlock()
		select {
		case <-reading:
		case <-ctx.Done():
			return 0, fmt.Errorf("keyring: read the erasure generation: %w", ctx.Err())
		}
	}
}

// readGeneration reads the generation row for Epoch, which made
// k.gen.reading, and drops the cache when the row changed.
func (k *Keyring) readGeneration(ctx context.Context, q Querier, now time.Time) (uint64, error) {
	var g string
	err := q.QueryRowContext(ctx, k.rebind(`SELECT value FROM store_meta WHERE key = ?`), metaGeneration).Scan(&g)
	k.gen.Lock()
	defer k.gen.Unlock()
	close(k.gen.reading)
	k.gen.reading = nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("keyring: read the erasure generation: %w", err)
	}
	if k.gen.fresh.Load() != 0 && g != k.gen.value {
		k.dropAll()
	}
	k.gen.value = g
	k.gen.fresh.Store(now.Add(Freshness).UnixNano())
	return k.currentEpoch(), nil
}

func (k *Keyring) currentEpoch() uint64 { return k.epoch.Load() }

// dropAll empties the cache for an erasure and moves to a new epoch.
func (k *Keyring) dropAll() {
	k.mu.Lock()
	clear(k.keys)
	k.epoch.Add(1)
	k.mu.Unlock()
}

func (k *Keyring) read(ctx context.Context, q Querier, subject string) (*DataKey, error) {
	var id, kekID string
	var wrapped []byte
	err := q.QueryRowContext(ctx, k.rebind(`SELECT key_id, wrapped, kek_id FROM subject_keys WHERE subject = ?`), subject).Scan(&id, &wrapped, &kekID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, &ErasedError{Subject: subject}
	}
	if err != nil {
		return nil, fmt.Errorf("keyring: read key of %s: %w", subject, err)
	}
	return k.unwrap(subject, id, wrapped, kekID)
}

// unwrap is the data key of a subject_keys row: its wrapped key, which
// kekID wrapped.
func (k *Keyring) unwrap(subject, id string, wrapped []byte, kekID string) (*DataKey, error) {
	if kekID != k.kek.ID() {
		return nil, wrongKEK(kekID, k.kek.ID())
	}
	raw, err := k.kek.Unwrap(wrapped)
	if err != nil {
		return nil, fmt.Errorf("keyring: key of %s: %w", subject, err)
	}
	return k.dataKey(subject, id, raw)
}

// dataKey is the data key of subject with id, from its raw bytes.
func (k *Keyring) dataKey(subject, id string, raw []byte) (*DataKey, error) {
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, fmt.Errorf("keyring: key of %s: %w", subject, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("keyring: key of %s: %w", subject, err)
	}
	return newDataKey(subject, id, aead, raw), nil
}

// nonceKey derives, from a raw data key, the key SealFixed derives its
// nonces with: it goes with the data key, so once that is erased no one
// can recompute a nonce to test a guess of the plaintext.
func nonceKey(raw []byte) []byte {
	m := hmac.New(sha256.New, raw)
	m.Write([]byte("rath keyring: fixed nonce v1"))
	return m.Sum(nil)
}

func wrongKEK(stored, have string) *KEKError {
	return &KEKError{Reason: fmt.Sprintf("the store's keys are wrapped by key-encryption key %s, this one is %s", stored, have),
		Hint: "set RATH_KEK_FILE (or the config file's \"kek_file\") to the store's key-encryption key"}
}

// Open returns the plaintext of a sealed payload, bound to binding. A
// payload whose subject's key was erased (or replaced since) is an
// *ErasedError (ErrErased); one that does not authenticate a
// *SealedError (ErrSealed).
func (k *Keyring) Open(ctx context.Context, q Querier, sealed, binding []byte) ([]byte, error) {
	pt, _, err := k.OpenKey(ctx, q, sealed, binding)
	return pt, err
}

// OpenKey is Open that returns the key the payload was sealed under too.
func (k *Keyring) OpenKey(ctx context.Context, q Querier, sealed, binding []byte) ([]byte, *DataKey, error) {
	f, err := parseSealed(sealed)
	if err != nil {
		return nil, nil, err
	}
	dk, err := k.KeyByID(ctx, q, f.Subject, f.KeyID)
	if err != nil {
		return nil, nil, err
	}
	pt, err := open(dk, f, binding)
	if err != nil {
		return nil, nil, err
	}
	return pt, dk, nil
}

// maxGone bounds the destroyed keys a keyring remembers.
const maxGone = 1 << 16

func goneKey(subject, id string) string { return subject + "\x00" + id }

// KeyByID returns subject's data key whose id is id, as content sealed
// under it names it: an *ErasedError (ErrErased) once that key was
// destroyed, even if the subject has a new one.
func (k *Keyring) KeyByID(ctx context.Context, q Querier, subject, id string) (*DataKey, error) {
	k.mu.RLock()
	gone := k.gone[goneKey(subject, id)]
	k.mu.RUnlock()
	if gone {
		return nil, &ErasedError{Subject: subject}
	}
	dk, err := k.Key(ctx, q, subject)
	if err == nil && dk.ID != id {
		// The cache may predate an erasure and a new key made by
		// another process: ask the table again.
		k.Forget(subject)
		dk, err = k.Key(ctx, q, subject)
	}
	if err == nil && dk.ID != id {
		err = &ErasedError{Subject: subject}
	}
	if errors.Is(err, ErrErased) {
		k.mu.Lock()
		if len(k.gone) >= maxGone {
			clear(k.gone)
		}
		k.gone[goneKey(subject, id)] = true
		k.mu.Unlock()
	}
	if err != nil {
		return nil, err
	}
	return dk, nil
}

// Erase deletes subject's key in q (a transaction: the caller commits it
// with the event that records the erasure) and returns the destroyed
// key's id. A subject with no key is an *ErasedError (ErrErased). It
// rewrites the generation row in q too, so other processes drop their
// cached keys (Epoch). This keyring drops its cache at once, even if q
// rolls back (the keys are read again).
func (k *Keyring) Erase(ctx context.Context, q Querier, subject string) (keyID string, err error) {
	k.dropAll()
	err = q.QueryRowContext(ctx, k.rebind(`DELETE FROM subject_keys WHERE subject = ? RETURNING key_id`), subject).Scan(&keyID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", &ErasedError{Subject: subject}
	}
	if err != nil {
		return "", fmt.Errorf("keyring: erase key of %s: %w", subject, err)
	}
	gen := make([]byte, 16)
	if _, err := rand.Read(gen); err != nil {
		return "", fmt.Errorf("keyring: erase key of %s: %w", subject, err)
	}
	if _, err := q.ExecContext(ctx, k.rebind(`INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`),
		metaGeneration, hex.EncodeToString(gen)); err != nil {
		return "", fmt.Errorf("keyring: erase key of %s: %w", subject, err)
	}
	return keyID, nil
}

// Forget drops subject's key from the cache, so the next use reads the
// table: another process may have erased it.
func (k *Keyring) Forget(subject string) {
	k.mu.Lock()
	delete(k.keys, subject)
	k.mu.Unlock()
}

// ForgetAll empties the cache and moves to a new epoch: an erasure's
// caller calls it once the erasure committed, so no key read meanwhile
// stays cached.
func (k *Keyring) ForgetAll() { k.dropAll() }

// CheckKEK says whether a store's keys can be opened with kek: with a nil
// kek, a store holding any key is a *KEKError (its content is sealed and
// would not open, and new content would go in clear beside it); with a
// kek, a store holding keys wrapped by another is one too. It reads one
// row at most.
func CheckKEK(ctx context.Context, q Querier, rebind func(string) string, kek KEK) error {
	if rebind == nil {
		rebind = func(q string) string { return q }
	}
	var stored string
	var err error
	if kek == nil {
		err = q.QueryRowContext(ctx, `SELECT kek_id FROM subject_keys LIMIT 1`).Scan(&stored)
	} else {
		err = q.QueryRowContext(ctx, rebind(`SELECT kek_id FROM subject_keys WHERE kek_id <> ? LIMIT 1`), kek.ID()).Scan(&stored)
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("keyring: check key-encryption key: %w", err)
	case kek == nil:
		return &KEKError{Reason: fmt.Sprintf("the store holds content sealed under key-encryption key %s, and none is set", stored),
			Hint: "set RATH_KEK_FILE (or the config file's \"kek_file\") to it"}
	default:
		return wrongKEK(stored, kek.ID())
	}
}
