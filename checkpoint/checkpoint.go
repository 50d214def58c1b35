package checkpoint

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/signkey"
)

// OriginPrefix starts the origin line of every rath checkpoint.
const OriginPrefix = "rath.store/"

// Errors.
var (
	// ErrNoStoreID reports a store whose schema predates checkpoints
	// (store_meta has no store_id): run rath migrate.
	ErrNoStoreID = errors.New("checkpoint: the store has no store_id (migrate it)")
	// ErrMalformed reports a checkpoint text that is not a rath
	// tlog-checkpoint body.
	ErrMalformed = errors.New("checkpoint: malformed checkpoint")
	// ErrEmptyLog reports a log with no events: there is no tree to sign.
	ErrEmptyLog = errors.New("checkpoint: the log is empty")
	// ErrNone reports that no stored checkpoint answers the request.
	ErrNone = errors.New("checkpoint: no such checkpoint")
)

// Checkpoint is one stored signed checkpoint.
type Checkpoint struct {
	ID     int64
	Origin string
	Size   int64
	Root   tlog.Hash
	// KeyName and VerifierKey are those of the key that signed it (a
	// note verifier key, "name+hash+base64").
	KeyName     string
	VerifierKey string
	// Note is the signed note exactly as its signer wrote it.
	Note     []byte
	SignedAt time.Time
	// Cosignatures are the witnesses' cosignatures, oldest first.
	Cosignatures []Cosignature
}

// Cosignature is a witness's signature line over a checkpoint's text.
type Cosignature struct {
	// WitnessKey is the witness's note verifier key.
	WitnessKey string
	// Line is the note signature line, "— name base64\n".
	Line string
	At   time.Time
}

// Name is the witness key's name.
func (c Cosignature) Name() string { name, _, _ := strings.Cut(c.WitnessKey, "+"); return name }

// Signed returns the signed note with every cosignature line after the
// signer's: what a verifier opens with note.Open.
func (c *Checkpoint) Signed() []byte {
	out := bytes.Clone(c.Note)
	for _, co := range c.Cosignatures {
		out = append(out, co.Line...)
	}
	return out
}

// Text is the checkpoint's note text (its body).
func (c *Checkpoint) Text() string {
	return Body(c.Origin, eventlog.TreeHead{Size: c.Size, Root: c.Root})
}

// Body formats the tlog-checkpoint body of head for origin.
func Body(origin string, head eventlog.TreeHead) string {
	return origin + "\n" + strconv.FormatInt(head.Size, 10) + "\n" + head.Root.String() + "\n"
}

// ParseBody parses a tlog-checkpoint body as Body writes it: exactly
// three lines (rath writes no extension lines and accepts none), a
// positive decimal size without leading zeros and a 32-byte root.
func ParseBody(text string) (origin string, head eventlog.TreeHead, err error) {
	lines := strings.Split(text, "\n")
	if len(lines) != 4 || lines[3] != "" || lines[0] == "" {
		return "", head, fmt.Errorf("%w: want three lines (origin, size, root)", ErrMalformed)
	}
	n, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || n < 1 || strconv.FormatInt(n, 10) != lines[1] {
		return "", head, fmt.Errorf("%w: size %q", ErrMalformed, lines[1])
	}
	root, err := tlog.ParseHash(lines[2])
	if err != nil || root.String() != lines[2] {
		return "", head, fmt.Errorf("%w: root %q", ErrMalformed, lines[2])
	}
	return lines[0], eventlog.TreeHead{Size: n, Root: root}, nil
}

// Origin returns the store's origin line, OriginPrefix and its store id.
func Origin(ctx context.Context, store *eventlog.Store) (string, error) {
	var id string
	err := store.DB().QueryRowContext(ctx, `SELECT value FROM store_meta WHERE key = 'store_id'`).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrNoStoreID
	}
	if err != nil {
		return "", fmt.Errorf("checkpoint: read the store id: %w", err)
	}
	if id == "" || strings.ContainsAny(id, "\n+ ") {
		return "", fmt.Errorf("%w: store_meta store_id %q was altered", ErrMalformed, id)
	}
	return OriginPrefix + id, nil
}

// Sign signs the log's current tree head with key and stores the
// checkpoint. The head is recomputed from the stored tree (not taken from
// the head the writer recorded) so a damaged head is never signed. A
// checkpoint of the same size by the same key already stored is returned
// as is.
func Sign(ctx context.Context, store *eventlog.Store, key *signkey.Key) (*Checkpoint, error) {
	recorded, err := store.TreeHead(ctx)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: sign: %w", err)
	}
	if recorded.Size == 0 {
		return nil, ErrEmptyLog
	}
	head, err := store.TreeHeadAt(ctx, recorded.Size)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: sign: %w", err)
	}
	if head != recorded {
		return nil, fmt.Errorf("checkpoint: sign: the recorded tree head %s is not the stored tree's %s: run verify", recorded, head)
	}
	return signHead(ctx, store, key, head, time.Now())
}

// signHead signs head and stores the checkpoint through the store's
// writer.
func signHead(ctx context.Context, store *eventlog.Store, key *signkey.Key, head eventlog.TreeHead, now time.Time) (*Checkpoint, error) {
	origin, err := Origin(ctx, store)
	if err != nil {
		return nil, err
	}
	signed, err := note.Sign(&note.Note{Text: Body(origin, head)}, key.NoteSigner())
	if err != nil {
		return nil, fmt.Errorf("checkpoint: sign: %w", err)
	}
	cp := &Checkpoint{Origin: origin, Size: head.Size, Root: head.Root, KeyName: key.Name(), VerifierKey: key.VerifierKey(), Note: signed, SignedAt: now}
	err = store.Exclusive(ctx, func(_ context.Context, tx *eventlog.Tx) error {
		_, err := tx.Exec(`INSERT INTO checkpoints (size, root, key_name, verifier_key, note, signed_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (size, verifier_key) DO NOTHING`,
			cp.Size, cp.Root[:], cp.KeyName, cp.VerifierKey, cp.Note, now.UnixNano())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoint: store: %w", err)
	}
	return cp, nil
}

const selectCheckpoints = `SELECT id, size, root, key_name, verifier_key, note, signed_at FROM checkpoints`

// List returns the stored checkpoints in size order (then by id), with
// their cosignatures. Rows are returned as stored: Verify checks them.
func List(ctx context.Context, store *eventlog.Store) ([]*Checkpoint, error) {
	return query(ctx, store, selectCheckpoints+` ORDER BY size, id`)
}

// Latest returns the stored checkpoint of the largest size (the first
// stored of that size), or ErrNone.
func Latest(ctx context.Context, store *eventlog.Store) (*Checkpoint, error) {
	cps, err := query(ctx, store, selectCheckpoints+` ORDER BY size DESC, id LIMIT 1`)
	if err != nil {
		return nil, err
	}
	if len(cps) == 0 {
		return nil, ErrNone
	}
	return cps[0], nil
}

// Covering returns the stored checkpoint of the smallest size at least
// size, with its cosignatures: the checkpoint an export of events up to
// seq size points to. Its Signed bytes are the note with the signer's
// and every witness's signature lines. It returns ErrNone if no stored
// checkpoint covers size (sign one first). The checkpoint is returned as
// stored: check it with Verify or note.Open.
func Covering(ctx context.Context, store *eventlog.Store, size int64) (*Checkpoint, error) {
	cps, err := query(ctx, store, selectCheckpoints+` WHERE size >= ? ORDER BY size, id LIMIT 1`, size)
	if err != nil {
		return nil, err
	}
	if len(cps) == 0 {
		return nil, fmt.Errorf("%w covers size %d", ErrNone, size)
	}
	return cps[0], nil
}

func query(ctx context.Context, store *eventlog.Store, q string, args ...any) ([]*Checkpoint, error) {
	db := store.DB()
	rows, err := db.QueryContext(ctx, db.Rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: read checkpoints: %w", err)
	}
	defer rows.Close()
	var out []*Checkpoint
	byID := map[int64]*Checkpoint{}
	for rows.Next() {
		var cp Checkpoint
		var root []byte
		var at int64
		if err := rows.Scan(&cp.ID, &cp.Size, &root, &cp.KeyName, &cp.VerifierKey, &cp.Note, &at); err != nil {
			return nil, fmt.Errorf("checkpoint: read checkpoints: %w", err)
		}
		copy(cp.Root[:], root) // a short root is caught by Verify against the note
		cp.SignedAt = time.Unix(0, at)
		if origin, _, err := ParseBody(noteText(cp.Note)); err == nil {
			cp.Origin = origin
		}
		out = append(out, &cp)
		byID[cp.ID] = &cp
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("checkpoint: read checkpoints: %w", err)
	}
	rows.Close()
	if len(out) == 0 {
		return out, nil
	}
	return out, readCosignatures(ctx, db, byID)
}

// maxIDsPerRead bounds the ids of one cosignature lookup; past it, all
// cosignatures are read.
const maxIDsPerRead = 256

func readCosignatures(ctx context.Context, db *sqlx.DB, byID map[int64]*Checkpoint) error {
	q := `SELECT checkpoint_id, witness_key, signature, at FROM checkpoint_cosignatures`
	var args []any
	if len(byID) <= maxIDsPerRead {
		q += ` WHERE checkpoint_id IN (?` + strings.Repeat(`, ?`, len(byID)-1) + `)`
		for id := range byID {
			args = append(args, id)
		}
	}
	rows, err := db.QueryContext(ctx, db.Rebind(q+` ORDER BY at, witness_key`), args...)
	if err != nil {
		return fmt.Errorf("checkpoint: read cosignatures: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, at int64
		var co Cosignature
		if err := rows.Scan(&id, &co.WitnessKey, &co.Line, &at); err != nil {
			return fmt.Errorf("checkpoint: read cosignatures: %w", err)
		}
		co.At = time.Unix(0, at)
		if cp, ok := byID[id]; ok {
			cp.Cosignatures = append(cp.Cosignatures, co)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("checkpoint: read cosignatures: %w", err)
	}
	return nil
}

// noteText is the text of a signed note: everything up to the blank line
// before its signatures ("" if there is none).
func noteText(signed []byte) string {
	i := bytes.LastIndex(signed, []byte("\n\n"))
	if i < 0 {
		return ""
	}
	return string(signed[:i+1])
}

// ForExport returns the checkpoint an export of events up to seq minSize
// should carry: of the stored checkpoints signed by key that cover
// minSize, the one most witnesses cosigned (the smallest of those). With
// none stored yet it signs and stores one now, so an exported checkpoint
// is always one the store keeps, that verify checks and a witness can
// cosign later, never a note that exists only in the export.
func ForExport(ctx context.Context, store *eventlog.Store, key *signkey.Key, minSize int64) (*Checkpoint, error) {
	all, err := List(ctx, store)
	if err != nil {
		return nil, err
	}
	var best *Checkpoint
	for _, cp := range all {
		if cp.Size >= minSize && cp.VerifierKey == key.VerifierKey() && (best == nil || len(cp.Cosignatures) > len(best.Cosignatures)) {
			best = cp
		}
	}
	if best != nil {
		return best, nil
	}
	cp, err := Sign(ctx, store, key)
	if err != nil {
		return nil, err
	}
	if cp.Size < minSize {
		return nil, fmt.Errorf("checkpoint: the log's tree has %d leaves, fewer than %d", cp.Size, minSize)
	}
	return cp, nil
}

// Witnesses are the verifier keys of the witnesses that cosigned c.
func (c *Checkpoint) Witnesses() []string {
	var keys []string
	for _, cs := range c.Cosignatures {
		keys = append(keys, cs.WitnessKey)
	}
	return keys
}
