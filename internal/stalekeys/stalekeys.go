package stalekeys

import (
	"context"
	"sync"

	"github.com/gorath/rath/keyring"
)

// Sealer answers from the keys it found before, erased or not, until
// Forget; it is an eventlog.Sealer.
type Sealer struct {
	*keyring.Keyring
	mu   sync.Mutex // protects keys
	keys map[string]*keyring.DataKey
}

// New returns a Sealer over kr.
func New(kr *keyring.Keyring) *Sealer {
	return &Sealer{Keyring: kr, keys: map[string]*keyring.DataKey{}}
}

// Key returns the key found before, or else kr's.
func (s *Sealer) Key(ctx context.Context, q keyring.Querier, subject string) (*keyring.DataKey, error) {
	return s.remember(subject, func() (*keyring.DataKey, error) { return s.Keyring.Key(ctx, q, subject) })
}

// FindOrCreate returns the key found before, or else kr's.
func (s *Sealer) FindOrCreate(ctx context.Context, q keyring.Querier, subject string) (*keyring.DataKey, error) {
	return s.remember(subject, func() (*keyring.DataKey, error) { return s.Keyring.FindOrCreate(ctx, q, subject) })
}

// Cached returns the key found before, if any.
func (s *Sealer) Cached(subject string) *keyring.DataKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[subject]
}

// Forget drops subject's key, here and in kr.
func (s *Sealer) Forget(subject string) {
	s.mu.Lock()
	delete(s.keys, subject)
	s.mu.Unlock()
	s.Keyring.Forget(subject)
}

// remember answers subject's key found before, or find's, which it keeps.
func (s *Sealer) remember(subject string, find func() (*keyring.DataKey, error)) (*keyring.DataKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if dk := s.keys[subject]; dk != nil {
		return dk, nil
	}
	dk, err := find()
	if err == nil {
		s.keys[subject] = dk
	}
	return dk, err
}
