package access_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/access"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

func TestParseRole(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want access.Role
		err  bool
	}{
		{"viewer", access.Viewer, false},
		{" Approver ", access.Approver, false},
		{"OPERATOR", access.Operator, false},
		{"admin", access.Admin, false},
		{"root", "", true},
		{"", "", true},
	} {
		got, err := access.ParseRole(tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("ParseRole(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.err)
		}
		var re *access.RoleError
		if tc.err && (!errors.Is(err, access.ErrRole) || !errors.As(err, &re) || re.Role != tc.in) {
			t.Errorf("ParseRole(%q) error = %#v, want a *RoleError matching ErrRole", tc.in, err)
		}
	}
}

func TestRole_Allows(t *testing.T) {
	actions := []access.Action{access.Read, access.Decide, access.Operate, access.Administer}
	for _, tc := range []struct {
		role access.Role
		want string // one letter per action allowed, in the order of actions
	}{
		{access.Viewer, "r---"},
		{access.Approver, "rd--"},
		{access.Operator, "r-o-"},
		{access.Admin, "rdoa"},
		{access.Role("root"), "----"},
	} {
		var got strings.Builder
		for i, a := range actions {
			if tc.role.Allows(a) {
				got.WriteByte("rdoa"[i])
			} else {
				got.WriteByte('-')
			}
		}
		if got.String() != tc.want {
			t.Errorf("%s allows %s, want %s", tc.role, got.String(), tc.want)
		}
	}
}

func TestIdentity_Context(t *testing.T) {
	if _, ok := access.IdentityFrom(context.Background()); ok {
		t.Fatal("a bare context has an identity")
	}
	id := access.Identity{Subject: "alice@example.com", Issuer: "https://idp.example", Tenant: "acme", Role: access.Approver, Via: "oidc"}
	got, ok := access.IdentityFrom(access.WithIdentity(context.Background(), id))
	if !ok || got != id {
		t.Fatalf("IdentityFrom = %+v, %v; want %+v", got, ok, id)
	}
}

var dbs atomic.Int64

// stores opens a fresh runtime on each store: SQLite and PostgreSQL.
func stores(t *testing.T) map[string]*rath.Runtime {
	t.Helper()
	dsn, err := pg.CreateDatabase(t.Context(), fmt.Sprintf("access_%d", dbs.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*rath.Runtime{}
	for name, opts := range map[string]rath.Options{"sqlite": {Dir: t.TempDir()}, "postgres": {Dir: t.TempDir(), DSN: dsn}} {
		rt, err := rath.OpenWith(t.Context(), opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(func() { rt.Close() })
		out[name] = rt
	}
	return out
}

// A token is created, identifies its tenant and role, expires, and once
// revoked identifies no one; the log holds its hash, never its secret.
func TestTokens_Lifecycle(t *testing.T) {
	for name, rt := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			now := time.Now()
			plain, tok, err := access.CreateToken(ctx, rt, access.TokenSpec{Tenant: "acme", Role: access.Approver, By: "os:ann"}, now)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(plain, access.TokenPrefix) || len(plain) < 40 {
				t.Fatalf("token %q", plain)
			}
			id, err := access.LookupToken(ctx, rt, plain)
			want := access.Identity{Subject: "token:" + tok.ID, Issuer: access.IssuerToken, Tenant: "acme", Role: access.Approver, Via: access.ViaToken}
			if err != nil || id != want {
				t.Fatalf("LookupToken = %+v, %v; want %+v", id, err, want)
			}
			// Expiry: judged at the time given.
			short, stok, err := access.CreateToken(ctx, rt, access.TokenSpec{Role: access.Viewer, By: "os:ann", ExpiresAt: now.Add(time.Hour)}, now)
			if err != nil {
				t.Fatal(err)
			}
			if id, err := access.LookupTokenAt(ctx, rt, short, now.Add(time.Minute)); err != nil || id.Tenant != events.DefaultTenant {
				t.Fatalf("an unexpired token: %+v, %v", id, err)
			}
			_, err = access.LookupTokenAt(ctx, rt, short, now.Add(2*time.Hour))
			var te *access.TokenError
			if !errors.Is(err, access.ErrTokenExpired) || !errors.As(err, &te) || te.ID != stok.ID {
				t.Fatalf("an expired token: %v", err)
			}
			if _, _, err := access.CreateToken(ctx, rt, access.TokenSpec{Role: access.Viewer, By: "os:ann", ExpiresAt: now.Add(-time.Second)}, now); !errors.Is(err, access.ErrInvalid) {
				t.Fatalf("an expiry in the past: %v", err)
			}
			if _, _, err := access.CreateToken(ctx, rt, access.TokenSpec{Role: "root", By: "os:ann"}, now); !errors.Is(err, access.ErrRole) {
				t.Fatalf("an unknown role: %v", err)
			}
			// Unknown tokens, of our form or not.
			for _, bad := range []string{"rath_" + strings.Repeat("0", 64), "not-a-token", ""} {
				if _, err := access.LookupToken(ctx, rt, bad); !errors.Is(err, access.ErrTokenUnknown) {
					t.Fatalf("LookupToken(%q) = %v, want ErrTokenUnknown", bad, err)
				}
			}
			// Revoke: once.
			if err := access.RevokeToken(ctx, rt, tok.ID, "os:bob"); err != nil {
				t.Fatal(err)
			}
			if _, err := access.LookupToken(ctx, rt, plain); !errors.Is(err, access.ErrTokenRevoked) {
				t.Fatalf("a revoked token: %v", err)
			}
			if err := access.RevokeToken(ctx, rt, tok.ID, "os:bob"); !errors.Is(err, access.ErrTokenRevoked) {
				t.Fatalf("a second revoke: %v", err)
			}
			if err := access.RevokeToken(ctx, rt, "tok-nosuch", "os:bob"); !errors.Is(err, access.ErrTokenUnknown) {
				t.Fatalf("revoke of an unknown token: %v", err)
			}
			ts, err := access.Tokens(ctx, rt)
			if err != nil || len(ts) != 2 {
				t.Fatalf("Tokens = %+v, %v", ts, err)
			}
			if got := ts[0].Status(now); got != "revoked" || ts[0].RevokedBy != "os:bob" {
				t.Fatalf("first token: %s by %q", got, ts[0].RevokedBy)
			}
			if got := ts[1].Status(now.Add(2 * time.Hour)); got != "expired" {
				t.Fatalf("second token later: %s", got)
			}
			// The log holds the hash, never the secret.
			var n int
			if err := rt.Store().DB().QueryRowContext(ctx, rt.Store().DB().Rebind(`SELECT count(*) FROM events WHERE payload LIKE ?`), "%"+strings.TrimPrefix(plain, access.TokenPrefix)+"%").Scan(&n); err != nil || n != 0 {
				t.Fatalf("events holding the secret: %d, %v", n, err)
			}
			if rep, err := rt.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !rep.OK() || rep.Projections == nil || !rep.Projections.OK() {
				t.Fatalf("verify: %+v, %v", rep, err)
			}
		})
	}
}

// Each Record is one access.viewed event and one row Records lists, by
// run, by who and since a time; a record of nothing read is refused.
func TestRecords(t *testing.T) {
	for name, rt := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			t0 := time.Unix(1_700_000_000, 0)
			ann := access.Identity{Subject: "os:ann", Issuer: access.IssuerLocal, Role: access.Admin, Via: access.ViaCLI}
			bob := access.Identity{Subject: "token:tok-1", Issuer: access.IssuerToken, Tenant: "acme", Role: access.Viewer, Via: access.ViaToken}
			for i, r := range []struct {
				id access.Identity
				v  access.Viewed
			}{
				{ann, access.Viewed{Run: "run-a", FromSeq: 1, ToSeq: 9, What: events.ViewedEvents, Route: "GET /api/runs/{id}/events"}},
				{bob, access.Viewed{Run: "run-a", FromSeq: 4, ToSeq: 4, What: events.ViewedModelCall, Route: "GET /api/runs/{id}/calls/{seq}"}},
				{bob, access.Viewed{Namespace: "notes", What: events.ViewedMemory, Route: "GET /api/memory/list"}},
			} {
				if err := access.Record(ctx, rt, r.id, r.v, t0.Add(time.Duration(i)*time.Hour)); err != nil {
					t.Fatal(err)
				}
			}
			if err := access.Record(ctx, rt, ann, access.Viewed{What: events.ViewedEvents, Route: "x"}, t0); !errors.Is(err, events.ErrInvalid) {
				t.Fatalf("a record of nothing: %v", err)
			}
			if err := access.Record(ctx, rt, access.Identity{}, access.Viewed{Run: "r", What: events.ViewedEvents, Route: "x"}, t0); !errors.Is(err, access.ErrInvalid) {
				t.Fatalf("a record by no one: %v", err)
			}
			for _, tc := range []struct {
				f    access.Filter
				want string
			}{
				{access.Filter{}, "os:ann events run-a 1-9; token:tok-1 model_call run-a 4-4; token:tok-1 memory notes"},
				{access.Filter{Run: "run-a"}, "os:ann events run-a 1-9; token:tok-1 model_call run-a 4-4"},
				{access.Filter{Who: "token:tok-1"}, "token:tok-1 model_call run-a 4-4; token:tok-1 memory notes"},
				{access.Filter{Since: t0.Add(90 * time.Minute)}, "token:tok-1 memory notes"},
				{access.Filter{Limit: 1}, "token:tok-1 memory notes"},
				{access.Filter{Run: "run-b"}, ""},
			} {
				rs, err := access.Records(ctx, rt.Store().DB(), tc.f)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, r := range rs {
					if r.Namespace != "" {
						got = append(got, fmt.Sprintf("%s %s %s", r.Who, r.What, r.Namespace))
					} else {
						got = append(got, fmt.Sprintf("%s %s %s %d-%d", r.Who, r.What, r.Run, r.FromSeq, r.ToSeq))
					}
				}
				if g := strings.Join(got, "; "); g != tc.want {
					t.Errorf("Records(%+v) = %q, want %q", tc.f, g, tc.want)
				}
			}
		})
	}
}
