package console

import (
	"errors"
	"testing"

	"github.com/gorath/rath/access"
)

// TestMapClaim: which tenant and role a claim's values grant, and which
// values are ignored.
func TestMapClaim(t *testing.T) {
	tests := []struct {
		name    string
		values  []string
		want    string
		tenant  string
		role    access.Role
		noGrant bool
	}{
		{name: "one", values: []string{"acme:approver"}, tenant: "acme", role: "approver"},
		{name: "highest role in the tenant wins", values: []string{"acme:viewer", "acme:operator", "acme:approver"}, tenant: "acme", role: "operator"},
		{name: "first tenant in claim order", values: []string{"globex:viewer", "acme:admin"}, tenant: "globex", role: "viewer"},
		{name: "tenant asked for", values: []string{"globex:viewer", "acme:admin"}, want: "acme", tenant: "acme", role: "admin"},
		{name: "tenant asked for not granted", values: []string{"globex:viewer"}, want: "acme", noGrant: true},
		{name: "other groups ignored", values: []string{"engineering", "acme:root", ":viewer", "a b:viewer", "x:y:viewer", " acme:viewer "}, tenant: "acme", role: "viewer"},
		{name: "none", values: nil, noGrant: true},
		{name: "role names are case-insensitive", values: []string{"acme:Approver"}, tenant: "acme", role: "approver"},
		{name: "only foreign groups", values: []string{"engineering", "design"}, noGrant: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tenant, role, err := mapClaim(tt.values, tt.want)
			if tt.noGrant {
				if !errors.Is(err, errNoGrant) {
					t.Fatalf("mapClaim(%q) = %s, %s, %v; want errNoGrant", tt.values, tenant, role, err)
				}
				return
			}
			if err != nil || tenant != tt.tenant || role != tt.role {
				t.Fatalf("mapClaim(%q, %q) = %s, %s, %v; want %s, %s", tt.values, tt.want, tenant, role, err, tt.tenant, tt.role)
			}
		})
	}
}

// TestClaimValues: a claim is a list of strings or one string; anything
// else grants nothing.
func TestClaimValues(t *testing.T) {
	tests := []struct {
		in   any
		want int
	}{
		{"acme:viewer", 1},
		{[]any{"acme:viewer", 3, "globex:admin"}, 2},
		{map[string]any{"acme": "viewer"}, 0},
		{nil, 0},
	}
	for _, tt := range tests {
		if got := claimValues(tt.in); len(got) != tt.want {
			t.Errorf("claimValues(%v) = %q, want %d values", tt.in, got, tt.want)
		}
	}
}

// TestLocalPath: a sign-in only ever returns to a path on this site.
func TestLocalPath(t *testing.T) {
	tests := map[string]string{
		"/":                     "/",
		"/#/run/r1":             "/#/run/r1",
		"/?view=1":              "/?view=1",
		"":                      "/",
		"https://evil.example/": "/",
		"//evil.example/x":      "/",
		"/\\evil.example":       "/",
		"javascript:alert(1)":   "/",
		"/\r\nSet-Cookie: x=1":  "/",
	}
	for in, want := range tests {
		if got := localPath(in); got != want {
			t.Errorf("localPath(%q) = %q, want %q", in, got, want)
		}
	}
}
