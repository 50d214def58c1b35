package access

import (
	"context"
	"os"
	"os/user"
	"strings"
)

// Role is what an identity may do in its tenant.
type Role string

// The roles, from least to most.
const (
	Viewer   Role = "viewer"   // reads runs
	Approver Role = "approver" // reads, decides approvals
	Operator Role = "operator" // reads, submits, cancels, resumes, forks, replays
	Admin    Role = "admin"    // everything: tokens, retention, erasure
)

// Roles are the roles, from least to most.
var Roles = []Role{Viewer, Approver, Operator, Admin}

// ParseRole returns the role named s (case-insensitive), or a *RoleError.
func ParseRole(s string) (Role, error) {
	r := Role(strings.ToLower(strings.TrimSpace(s)))
	switch r {
	case Viewer, Approver, Operator, Admin:
		return r, nil
	}
	return "", &RoleError{Role: s}
}

// Action is what a request does, as a route declares it.
type Action string

// The actions.
const (
	Read       Action = "read"    // read runs, sessions, memory, approvals
	Decide     Action = "decide"  // decide an approval
	Operate    Action = "operate" // submit, cancel, resume, fork, replay, verify
	Administer Action = "admin"   // tokens, retention, erasure (memory forget)
)

// Allows reports whether role r may do a: a viewer reads; an approver
// reads and decides; an operator reads and operates but does not decide;
// an admin does all. An unknown role allows nothing.
func (r Role) Allows(a Action) bool {
	switch r {
	case Admin:
		return a == Read || a == Decide || a == Operate || a == Administer
	case Operator:
		return a == Read || a == Operate
	case Approver:
		return a == Read || a == Decide
	case Viewer:
		return a == Read
	}
	return false
}

// Issuers and ways of an Identity that rath itself gives.
const (
	IssuerToken = "rath-token" // an API token
	IssuerLocal = "local"      // this machine: the OS user

	ViaToken       = "token"        // an API token (Authorization: Bearer)
	ViaSingleToken = "single-token" // rath serve --token
	ViaLoopback    = "loopback"     // rath serve on loopback without a token
	ViaCLI         = "cli"          // a command run by the OS user
)

// Identity is who makes a request or runs a command: it is recorded in
// access.viewed events and in approval decisions.
type Identity struct {
	// Subject names who: "alice@example.com", "token:ID", "os:USER".
	Subject string `json:"subject"`
	// Issuer vouches for Subject: an OIDC issuer URL, IssuerToken or
	// IssuerLocal.
	Issuer string `json:"issuer"`
	// Tenant is the tenant it acts for; "" means every tenant, which only
	// the local single-user modes give.
	Tenant string `json:"tenant"`
	// Role is what it may do in Tenant.
	Role Role `json:"role"`
	// Via is how it was established: "oidc", ViaToken, ViaSingleToken,
	// ViaLoopback, ViaCLI.
	Via string `json:"via"`
}

// Allows reports whether the identity's role allows a.
func (id Identity) Allows(a Action) bool { return id.Role.Allows(a) }

type identityKey struct{}

// WithIdentity returns a context carrying id, for the handlers of one
// request.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the identity WithIdentity set, and whether there
// was one.
func IdentityFrom(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

// Local is the identity of this machine's OS user, established via via
// (ViaCLI, ViaLoopback, ViaSingleToken): an admin of every tenant, as
// whoever reaches the store is.
func Local(via string) Identity {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "unknown"
	}
	return Identity{Subject: "os:" + name, Issuer: IssuerLocal, Role: Admin, Via: via}
}
