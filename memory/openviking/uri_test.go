package openviking_test

import (
	"errors"
	"testing"

	"github.com/gorath/rath/memory/openviking"
)

// ParseURI takes the public scopes and the home alias viking://~, and
// ForUser expands the alias to the caller's user root.
func TestParseURI_HomeAlias(t *testing.T) {
	for _, tt := range []struct {
		in, canon, forAna string
		err               bool
	}{
		{in: "viking://~", canon: "viking://~/", forAna: "viking://user/ana/"},
		{in: "viking://~/", canon: "viking://~/", forAna: "viking://user/ana/"},
		{in: "viking://~/memories/", canon: "viking://~/memories/", forAna: "viking://user/ana/memories/"},
		{in: "viking://~/memories/rath/x.md", canon: "viking://~/memories/rath/x.md", forAna: "viking://user/ana/memories/rath/x.md"},
		{in: "viking://user/bob/memories/", canon: "viking://user/bob/memories/", forAna: "viking://user/bob/memories/"},
		{in: "viking://resources/docs/", canon: "viking://resources/docs/", forAna: "viking://resources/docs/"},
		{in: "viking://~/../user/bob/", err: true},
		{in: "viking://~//x", err: true},
		{in: "viking://~bob/memories/", err: true},
		{in: "viking://~~/", err: true},
		{in: "~/memories/", err: true},
	} {
		u, err := openviking.ParseURI(tt.in)
		if tt.err {
			if !errors.Is(err, openviking.ErrInvalidArgument) {
				t.Errorf("%s: err = %v, want ErrInvalidArgument", tt.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if u.String() != tt.canon || u.ForUser("ana").String() != tt.forAna {
			t.Errorf("%s: %s, for ana %s; want %s, %s", tt.in, u, u.ForUser("ana"), tt.canon, tt.forAna)
		}
		if got := u.Home(); got != (u.Scope == openviking.ScopeHome) {
			t.Errorf("%s: Home() = %v", tt.in, got)
		}
	}
	if got := openviking.HomeURI().Join("memories").ForUser("ana").String(); got != "viking://user/ana/memories" {
		t.Errorf("HomeURI: %s", got)
	}
}
