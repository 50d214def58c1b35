package console

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorath/rath/access"
)

// grant is what a verified sign-in gives a session: the identity, until
// when.
type grant struct {
	id      access.Identity
	expires time.Time
}

// pendingSignIn is a sign-in between /auth/login and /auth/callback.
type pendingSignIn struct {
	nonce, verifier, redirect, next string
	// tenant is the one the user asked for (/auth/login?tenant=T); empty
	// means the first the claim grants.
	tenant  string
	expires time.Time
}

// signInStore holds the sign-ins in progress and the sessions, in
// memory. Sessions are keyed by the SHA-256 of their id, so a lookup's
// timing says nothing about the ids held.
type signInStore struct {
	mu       sync.Mutex // protects following fields
	pending  map[string]pendingSignIn
	sessions map[string]grant
}

func newSignInStore() *signInStore {
	return &signInStore{pending: map[string]pendingSignIn{}, sessions: map[string]grant{}}
}

// begin records a sign-in in progress; false when too many are.
func (s *signInStore) begin(state string, p pendingSignIn, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) >= maxPending {
		for k, v := range s.pending {
			if !now.Before(v.expires) {
				delete(s.pending, k)
			}
		}
		if len(s.pending) >= maxPending {
			return false
		}
	}
	s.pending[state] = p
	return true
}

// take removes and returns the sign-in of state: a state works once.
func (s *signInStore) take(state string, now time.Time) (pendingSignIn, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pending[state]
	delete(s.pending, state)
	return p, ok && now.Before(p.expires)
}

// open starts a session, dropping the expired ones.
func (s *signInStore) open(id string, g grant, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range s.sessions {
		if !now.Before(v.expires) {
			delete(s.sessions, k)
		}
	}
	s.sessions[sessionKey(id)] = g
}

// lookup returns the live session of id; an expired one is dropped.
func (s *signInStore) lookup(id string, now time.Time) (grant, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := sessionKey(id)
	g, ok := s.sessions[k]
	if ok && !now.Before(g.expires) {
		delete(s.sessions, k)
		return grant{}, false
	}
	return g, ok
}

func (s *signInStore) close(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, sessionKey(id))
}

func sessionKey(id string) string {
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:])
}

// roleRank orders the roles for a user granted several in one tenant:
// the highest wins (access.Roles lists them from least to most). An
// operator does not decide approvals, so one who must both decide and
// operate is granted admin. Zero: no role.
func roleRank(r access.Role) int {
	return slices.Index(access.Roles, r) + 1
}

// errNoGrant: the claim grants no role (in the tenant asked for).
var errNoGrant = errors.New("no TENANT:ROLE value")

// noRoleError is a verified user whom the claim grants no role.
type noRoleError struct {
	subject, claim, tenant string
	err                    error
}

func (e *noRoleError) Error() string {
	in := ""
	if e.tenant != "" {
		in = " in tenant " + e.tenant
	}
	return fmt.Sprintf("%s is signed in, but the %q claim grants no role in rath%s: an administrator adds a value TENANT:ROLE "+
		"(role viewer, approver, operator or admin) to it at the provider", e.subject, e.claim, in)
}

func (e *noRoleError) Unwrap() error { return e.err }

// claimValues reads a claim that is a list of strings or one string.
func claimValues(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// mapClaim turns the claim's values into one tenant and role. A value
// TENANT:ROLE grants ROLE in TENANT; values of another form (groups
// other applications use) are ignored. The tenant is the one asked for
// if the claim grants it a role, else (none asked for) the first in the
// claim's order; the role is the highest granted in that tenant.
func mapClaim(values []string, want string) (tenant string, role access.Role, err error) {
	best := map[string]access.Role{}
	var order []string
	for _, v := range values {
		t, name, ok := strings.Cut(strings.TrimSpace(v), ":")
		if !ok || !validTenant(t) {
			continue
		}
		r, err := access.ParseRole(name)
		if err != nil || name != strings.TrimSpace(name) {
			continue
		}
		if _, seen := best[t]; !seen {
			order = append(order, t)
		}
		if roleRank(r) > roleRank(best[t]) {
			best[t] = r
		}
	}
	if want != "" {
		if r, ok := best[want]; ok {
			return want, r, nil
		}
		return "", "", errNoGrant
	}
	if len(order) == 0 {
		return "", "", errNoGrant
	}
	return order[0], best[order[0]], nil
}

// validTenant accepts the tenant names a claim may carry: letters,
// digits, '-', '_' and '.', at most 64.
func validTenant(t string) bool {
	if t == "" || len(t) > 64 {
		return false
	}
	for _, c := range t {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
