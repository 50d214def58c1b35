package eventlog

import (
	"context"
	"errors"
	"fmt"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/keyring"
)

// Sealed read models (docs/EVIDENCE.md, "What is sealed where"): with a
// Sealer, what a projector derives from an event's content (a run's
// params and error, an approval's question and reason) is sealed under
// the key the event's payload is sealed under (SealText), in the
// writer's transaction, so no read model holds plaintext the log does not, and an
// erasure leaves nothing to clear there. It uses keyring.SealFixed:
// a rebuilt read model equals, row for row, the one built as events
// came (projections.Check compares them).

// textBinding binds a sealed column to where it is stored.
func textBinding(binding string) []byte { return []byte("column\x00" + binding) }

// SealText seals text, derived by a projector from an event's content,
// under dk, the key the event's payload is sealed under, bound to binding
// (the table, column and row it is stored in: a value moved to another
// row does not open). With a nil dk (an event stored in clear, or a store
// without a key-encryption key), and for empty text, it returns text.
func SealText(dk *keyring.DataKey, binding, text string) string {
	if dk == nil || text == "" {
		return text
	}
	return string(keyring.SealFixed(dk, textBinding(binding), []byte(text)))
}

// SealingKey returns, while an append projects ev, the key its payload
// was sealed under (nil: in clear) and true; outside an append (a
// rebuild projects events it read from the log) false: Store.SealedKey
// finds it from ev.SealedUnder.
func (t *Tx) SealingKey(ev *events.Event) (*keyring.DataKey, bool) {
	if ev.Seq == 0 || ev.Seq != t.sealing.seq {
		return nil, false
	}
	return t.sealing.key, true
}

// SealedKey returns the data key an event read from the store was
// sealed under, which the read named (events.Event.SealedUnder): nil for
// one stored in clear, and for any on a store without a key-encryption
// key. It reads the table only for a key it has not cached. A key that
// is gone is keyring.ErrErased.
func (s *Store) SealedKey(ctx context.Context, under events.SealKey) (*keyring.DataKey, error) {
	if s.opts.Sealer == nil || under.Subject == "" {
		return nil, nil
	}
	dk, err := s.opts.Sealer.KeyByID(ctx, s.kdb, under.Subject, under.ID)
	if err != nil {
		return nil, fmt.Errorf("events: the key of %s: %w", under.Subject, err)
	}
	return dk, nil
}

// OpenText returns the plaintext of a read model's column as SealText
// stored it under binding; a value that is not sealed (a store without a
// key-encryption key, or a row written before columns were sealed) is
// returned as is. Once the subject's key is erased it returns erased true
// and no text. A sealed value that does not open is a *keyring.SealedError
// (keyring.ErrSealed); on a store without a key-encryption key, an error
// matching keyring.ErrKEK.
func (s *Store) OpenText(ctx context.Context, binding, stored string) (text string, erased bool, err error) {
	if !keyring.IsSealed([]byte(stored)) {
		return stored, false, nil
	}
	if s.opts.Sealer == nil {
		return "", false, fmt.Errorf("events: a read model's column is sealed and the store has no key-encryption key: %w", keyring.ErrKEK)
	}
	pt, err := s.opts.Sealer.Open(ctx, s.kdb, []byte(stored), textBinding(binding))
	if errors.Is(err, keyring.ErrErased) {
		return "", true, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("events: open a read model's column: %w", err)
	}
	return string(pt), false, nil
}
