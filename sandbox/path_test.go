package sandbox_test

import (
	"errors"
	"testing"

	"github.com/gorath/rath/sandbox"
)

var cleanPathTests = []struct {
	workdir, path string
	want          string
	err           error
}{
	{"/workspace", "", ".", nil},
	{"/workspace", ".", ".", nil},
	{"/workspace", "./", ".", nil},
	{"/workspace", "a.txt", "a.txt", nil},
	{"/workspace", "a//b/./c", "a/b/c", nil},
	{"/workspace", "a/../b", "b", nil},
	{"/workspace", "a/b/../../c", "c", nil},
	{"/workspace", "a/b/..", "a", nil},
	{"/workspace", "..", "", sandbox.ErrPathEscape},
	{"/workspace", "../x", "", sandbox.ErrPathEscape},
	{"/workspace", "a/../../x", "", sandbox.ErrPathEscape},
	{"/workspace", "a/../..", "", sandbox.ErrPathEscape},
	{"/workspace", "..foo", "..foo", nil},
	{"/workspace", "/workspace", ".", nil},
	{"/workspace", "/workspace/", ".", nil},
	{"/workspace", "/workspace/a/b", "a/b", nil},
	{"/workspace", "/workspace/a/../b", "b", nil},
	{"/workspace", "/workspace/../etc/passwd", "", sandbox.ErrPathEscape},
	{"/workspace", "/workspace2/x", "", sandbox.ErrPathEscape},
	{"/workspace", "/etc/passwd", "", sandbox.ErrPathEscape},
	{"/workspace", "/", "", sandbox.ErrPathEscape},
	{"/workspace/", "/workspace/a", "a", nil},
	{"", "/workspace/a", "", sandbox.ErrPathEscape},
	{"relative", "/relative/a", "", sandbox.ErrPathEscape},
	{"/", "/etc/passwd", "etc/passwd", nil},
	{"/workspace", "a\x00b", "", sandbox.ErrInvalidPath},
}

func TestCleanPath(t *testing.T) {
	for _, tt := range cleanPathTests {
		got, err := sandbox.CleanPath(tt.workdir, tt.path)
		if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
			t.Errorf("CleanPath(%q, %q) error = %v, want %v", tt.workdir, tt.path, err, tt.err)
			continue
		}
		if got != tt.want {
			t.Errorf("CleanPath(%q, %q) = %q, want %q", tt.workdir, tt.path, got, tt.want)
		}
	}
}

func FuzzCleanPath(f *testing.F) {
	for _, tt := range cleanPathTests {
		f.Add(tt.path)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := sandbox.CleanPath("/workspace", p)
		if err != nil {
			return
		}
		// Whatever is accepted stays inside: it is relative and never
		// climbs.
		if got == "" || got[0] == '/' || got == ".." || len(got) >= 3 && got[:3] == "../" {
			t.Fatalf("CleanPath(%q) = %q escapes", p, got)
		}
	})
}

func TestRelUnder(t *testing.T) {
	for _, tc := range []struct {
		root, p, rel string
		ok           bool
	}{
		{"/srv/ws", "/srv/ws", ".", true},
		{"/srv/ws", "/srv/ws/a/b", "a/b", true},
		{"/srv/ws", "/srv/ws/../x", "", false},
		{"/srv/ws", "/srv/wsx", "", false},
		{"/srv/ws", "/srv", "", false},
		{"/srv/ws", "/etc", "", false},
		{"/srv/ws", "/srv/ws/..foo", "..foo", true},
		{"/srv/ws", "rel", "", false},
	} {
		rel, ok := sandbox.RelUnder(tc.root, tc.p)
		if rel != tc.rel || ok != tc.ok {
			t.Errorf("RelUnder(%q, %q) = %q, %v; want %q, %v", tc.root, tc.p, rel, ok, tc.rel, tc.ok)
		}
	}
}
