package access

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// Runtime is what this package needs of a runtime: its log.
// *rath.Runtime is one.
type Runtime interface {
	Store() *eventlog.Store
}

// TokenPrefix starts every API token, so a secret scanner (and a person)
// can tell one.
const TokenPrefix = "rath_"

// Token is an API token as the store knows it: never its secret.
type Token struct {
	ID        string    `json:"id"`
	Tenant    string    `json:"tenant"`
	Role      Role      `json:"role"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt is zero for a token that does not expire.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// RevokedAt is zero for a token not revoked.
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	RevokedBy string    `json:"revoked_by,omitempty"`
}

// Status is the token's state at now: "active", "revoked" or "expired".
func (t Token) Status(now time.Time) string {
	switch {
	case !t.RevokedAt.IsZero():
		return "revoked"
	case !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt):
		return "expired"
	}
	return "active"
}

// Identity is who the token acts as.
func (t Token) Identity() Identity {
	return Identity{Subject: "token:" + t.ID, Issuer: IssuerToken, Tenant: t.Tenant, Role: t.Role, Via: ViaToken}
}

// TokenSpec is what a new token acts as.
type TokenSpec struct {
	// Tenant is the tenant the token acts for; empty means events.DefaultTenant.
	Tenant string
	// Role is what it may do there. Required.
	Role Role
	// ExpiresAt is when it stops working; zero for never.
	ExpiresAt time.Time
	// By is who creates it ("os:USER"). Required.
	By string
}

// CreateToken records a new token and returns its secret, which exists
// nowhere else: the log holds only its SHA-256. Errors: a *RoleError, an
// ErrInvalid (no creator, an expiry not after now), or the store's.
func CreateToken(ctx context.Context, rt Runtime, spec TokenSpec, now time.Time) (plain string, t Token, err error) {
	role, err := ParseRole(string(spec.Role))
	if err != nil {
		return "", Token{}, err
	}
	tenant := strings.TrimSpace(spec.Tenant)
	if tenant == "" {
		tenant = events.DefaultTenant
	}
	if spec.By == "" {
		return "", Token{}, invalid("a token needs who creates it")
	}
	if !spec.ExpiresAt.IsZero() && !spec.ExpiresAt.After(now) {
		return "", Token{}, invalid("a token's expiry %s is not after now", spec.ExpiresAt.UTC().Format(time.RFC3339))
	}
	id, err := randomHex(8)
	if err != nil {
		return "", Token{}, err
	}
	secret, err := randomHex(32)
	if err != nil {
		return "", Token{}, err
	}
	id, plain = "tok-"+id, TokenPrefix+secret
	e := events.TokenCreated{ID: id, Hash: hashOf(plain), Tenant: tenant, Role: string(role), By: spec.By}
	if !spec.ExpiresAt.IsZero() {
		e.ExpiresAt = spec.ExpiresAt.UnixNano()
	}
	evs, err := rt.Store().Append(ctx, events.TokenStream(id), eventlog.NoStream, e)
	if err != nil {
		return "", Token{}, fmt.Errorf("create token: %w", err)
	}
	t = Token{ID: id, Tenant: tenant, Role: role, CreatedBy: spec.By, CreatedAt: evs[0].At}
	if e.ExpiresAt != 0 {
		t.ExpiresAt = time.Unix(0, e.ExpiresAt)
	}
	return plain, t, nil
}

// RevokeToken records that token id no longer identifies anyone. Errors:
// a *TokenError (ErrTokenUnknown; ErrTokenRevoked for one revoked
// already, also when a concurrent revoke won), or the store's.
func RevokeToken(ctx context.Context, rt Runtime, id, by string) error {
	if by == "" {
		return invalid("a revoke needs who revokes")
	}
	t, err := tokenBy(ctx, rt, "id", id)
	if err != nil {
		return err
	}
	if !t.RevokedAt.IsZero() {
		return &TokenError{Kind: ErrTokenRevoked, ID: t.ID, At: t.RevokedAt}
	}
	_, err = rt.Store().Append(ctx, events.TokenStream(id), 1, events.TokenRevoked{ID: id, By: by})
	if errors.Is(err, eventlog.ErrConflict) {
		if t, err := tokenBy(ctx, rt, "id", id); err == nil && !t.RevokedAt.IsZero() {
			return &TokenError{Kind: ErrTokenRevoked, ID: t.ID, At: t.RevokedAt}
		}
	}
	if err != nil {
		return fmt.Errorf("revoke token %s: %w", id, err)
	}
	return nil
}

// LookupToken returns the identity an API token stands for, judged at
// the current time. Errors: a *TokenError (unknown, revoked or expired),
// or the store's.
func LookupToken(ctx context.Context, rt Runtime, plain string) (Identity, error) {
	return LookupTokenAt(ctx, rt, plain, time.Now())
}

// LookupTokenAt is LookupToken judged at now.
func LookupTokenAt(ctx context.Context, rt Runtime, plain string, now time.Time) (Identity, error) {
	if !strings.HasPrefix(plain, TokenPrefix) {
		return Identity{}, &TokenError{Kind: ErrTokenUnknown}
	}
	t, err := tokenBy(ctx, rt, "hash", hashOf(plain))
	if errors.Is(err, ErrTokenUnknown) {
		return Identity{}, &TokenError{Kind: ErrTokenUnknown} // never echo what was presented
	}
	if err != nil {
		return Identity{}, err
	}
	switch t.Status(now) {
	case "revoked":
		return Identity{}, &TokenError{Kind: ErrTokenRevoked, ID: t.ID, At: t.RevokedAt}
	case "expired":
		return Identity{}, &TokenError{Kind: ErrTokenExpired, ID: t.ID, At: t.ExpiresAt}
	}
	return t.Identity(), nil
}

// Tokens lists every token, oldest first.
func Tokens(ctx context.Context, rt Runtime) ([]Token, error) {
	db := rt.Store().DB()
	var rows []tokenRow
	if err := db.SelectContext(ctx, &rows, `SELECT `+tokenCols+` FROM api_tokens ORDER BY created_seq`); err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	out := make([]Token, len(rows))
	for i, r := range rows {
		out[i] = r.token()
	}
	return out, nil
}

const tokenCols = `id, tenant, role, expires_at, created_by, created_at, revoked_by, revoked_at`

type tokenRow struct {
	ID        string        `db:"id"`
	Tenant    string        `db:"tenant"`
	Role      string        `db:"role"`
	ExpiresAt int64         `db:"expires_at"`
	CreatedBy string        `db:"created_by"`
	CreatedAt int64         `db:"created_at"`
	RevokedBy string        `db:"revoked_by"`
	RevokedAt sql.NullInt64 `db:"revoked_at"`
}

func (r tokenRow) token() Token {
	t := Token{ID: r.ID, Tenant: r.Tenant, Role: Role(r.Role), CreatedBy: r.CreatedBy, CreatedAt: time.Unix(0, r.CreatedAt), RevokedBy: r.RevokedBy}
	if r.ExpiresAt != 0 {
		t.ExpiresAt = time.Unix(0, r.ExpiresAt)
	}
	if r.RevokedAt.Valid {
		t.RevokedAt = time.Unix(0, r.RevokedAt.Int64)
	}
	return t
}

// tokenBy reads one token by its id or its hash (col).
func tokenBy(ctx context.Context, rt Runtime, col, v string) (Token, error) {
	db := rt.Store().DB()
	var r tokenRow
	err := db.GetContext(ctx, &r, db.Rebind(`SELECT `+tokenCols+` FROM api_tokens WHERE `+col+` = ?`), v)
	if errors.Is(err, sql.ErrNoRows) {
		id := ""
		if col == "id" {
			id = v
		}
		return Token{}, &TokenError{Kind: ErrTokenUnknown, ID: id}
	}
	if err != nil {
		return Token{}, fmt.Errorf("read token: %w", err)
	}
	return r.token(), nil
}

func hashOf(plain string) string {
	h := sha256.Sum256([]byte(plain))
	return hex.EncodeToString(h[:])
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("access: random: %w", err)
	}
	return hex.EncodeToString(b), nil
}
