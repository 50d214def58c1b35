package access

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrRole is matched by a *RoleError.
	ErrRole = errors.New("access: unknown role")
	// ErrTokenUnknown is matched by a *TokenError for a token the store
	// does not hold.
	ErrTokenUnknown = errors.New("access: unknown token")
	// ErrTokenRevoked is matched by a *TokenError for a revoked token.
	ErrTokenRevoked = errors.New("access: token revoked")
	// ErrTokenExpired is matched by a *TokenError for a token past its
	// expiry.
	ErrTokenExpired = errors.New("access: token expired")
	// ErrNoIdentity means a request carries no identity at all (the
	// console answers it 401).
	ErrNoIdentity = errors.New("access: no identity")
	// ErrInvalid is matched by errors for a token or a record that cannot
	// be made (no tenant, an expiry in the past, nothing read).
	ErrInvalid = errors.New("access: invalid")
)

// RoleError is a role name that is not one of viewer, approver, operator,
// admin.
type RoleError struct{ Role string }

func (e *RoleError) Error() string {
	return fmt.Sprintf("access: unknown role %q: want viewer, approver, operator or admin", e.Role)
}

// Is makes errors.Is(err, ErrRole) true.
func (e *RoleError) Is(target error) bool { return target == ErrRole }

// TokenError is a token that identifies no one: Kind is ErrTokenUnknown,
// ErrTokenRevoked or ErrTokenExpired, which errors.Is matches. ID is empty
// for an unknown token; At is when it was revoked or expired.
type TokenError struct {
	Kind error
	ID   string
	At   time.Time
}

func (e *TokenError) Error() string {
	switch e.Kind {
	case ErrTokenRevoked:
		return fmt.Sprintf("access: token %s was revoked at %s", e.ID, e.At.UTC().Format(time.RFC3339))
	case ErrTokenExpired:
		return fmt.Sprintf("access: token %s expired at %s", e.ID, e.At.UTC().Format(time.RFC3339))
	case ErrTokenUnknown:
		if e.ID != "" {
			return fmt.Sprintf("access: no token %s (rath tokens list shows them)", e.ID)
		}
	}
	return e.Kind.Error()
}

// Is makes errors.Is(err, e.Kind) true.
func (e *TokenError) Is(target error) bool { return target == e.Kind }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
