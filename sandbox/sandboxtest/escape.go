package sandboxtest

import (
	"context"
	"testing"

	"github.com/gorath/rath/sandbox"
)

// fileOps runs every path-taking operation on p, for the escape tests.
func fileOps(sb sandbox.Sandbox) map[string]func(ctx context.Context, p string) error {
	ops := map[string]func(ctx context.Context, p string) error{
		"read": func(ctx context.Context, p string) error {
			_, err := sb.ReadFile(ctx, p)
			return err
		},
		"write": func(ctx context.Context, p string) error {
			_, err := sb.WriteFile(ctx, p, []byte("escaped"))
			return err
		},
		"stat": func(ctx context.Context, p string) error {
			_, err := sb.Stat(ctx, p)
			return err
		},
		"list": func(ctx context.Context, p string) error {
			_, err := sb.List(ctx, p, true)
			return err
		},
		"exec dir": func(ctx context.Context, p string) error {
			_, err := sb.Exec(ctx, sandbox.ExecRequest{Command: "pwd", Dir: p})
			return err
		},
	}
	if rm, ok := sb.(sandbox.Remover); ok {
		ops["remove"] = func(ctx context.Context, p string) error {
			_, err := rm.Remove(ctx, p)
			return err
		}
	}
	return ops
}

func (s *suite) testPathEscape(t *testing.T) {
	sb := s.open(t)
	s.write(t, sb, "dir/f.txt", "f")
	// Targets are harmless if a broken backend lets a write through:
	// /proc/self/environ cannot be written.
	escapes := []string{
		"..",
		"../outside.txt",
		"dir/../../outside.txt",
		"dir/../../../../../../proc/self/environ",
		"/proc/self/environ",
		"/proc",
		"/",
		sb.Workdir() + "/../outside.txt",
		sb.Workdir() + "-sibling/x",
	}
	for name, op := range fileOps(sb) {
		for _, p := range escapes {
			wantErr(t, name+" "+p, op(t.Context(), p), sandbox.ErrPathEscape, p)
		}
	}
	// Nothing was written anywhere inside either.
	got, err := sb.List(t.Context(), "", true)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"dir", "dir/f.txt"}; len(got) != len(want) {
		t.Errorf("workspace after escape attempts = %q, want %q", paths(got), want)
	}
}

func (s *suite) testSymlinkEscape(t *testing.T) {
	if !s.caps.ConfinedSymlinks {
		t.Skipf("%s: symlinks are resolved by the server inside its own container (Capabilities.ConfinedSymlinks is false)", s.b.Name())
	}
	sb := s.open(t)
	s.write(t, sb, "inside.txt", "inside")
	s.write(t, sb, "dir/deep/f.txt", "deep")
	// Links made by a command, then used by file operations: the case a
	// prompt-injected model would try. The outside targets are chosen so
	// that a broken backend leaks (the host process's environment) rather
	// than overwrites anything: writes to /proc/self/environ fail anyway.
	s.sh(t, sb, `ln -s /proc/self/environ abs-file
ln -s /proc abs-dir
ln -s .. up
ln -s ../outside.txt rel-out
ln -s dir/deep/../../.. sneaky
ln -s ../../.. dir/deep/up3
ln -s loop1 loop2
ln -s loop2 loop1
ln -s inside.txt ok-link
ln -s dir/deep ok-dir`)
	escapes := []string{"abs-file", "abs-dir/self/environ", "up/outside.txt", "rel-out", "sneaky/x", "dir/deep/up3/x"}
	for name, op := range fileOps(sb) {
		if name == "remove" {
			continue // removing a link removes the link itself; see below
		}
		for _, p := range escapes {
			if err := op(t.Context(), p); err == nil {
				t.Errorf("%s %s through a symlink: no error", name, p)
			} else {
				wantErr(t, name+" "+p, err, sandbox.ErrPathEscape, p)
			}
		}
	}
	// A directory link leading out cannot be listed or entered.
	wantErr(t, "list up", listErr(t, sb, "up"), sandbox.ErrPathEscape, "up")
	// A symlink loop is an error, not a hang.
	if _, err := sb.ReadFile(t.Context(), "loop1"); err == nil {
		t.Error("read a symlink loop: no error")
	}
	// Links that stay inside work.
	if got, err := sb.ReadFile(t.Context(), "ok-link"); err != nil || string(got) != "inside" {
		t.Errorf("read an inside link = %q, %v", got, err)
	}
	if got, err := sb.ReadFile(t.Context(), "ok-dir/f.txt"); err != nil || string(got) != "deep" {
		t.Errorf("read through an inside dir link = %q, %v", got, err)
	}
	// Removing an outward link removes the link, never its target.
	if rm, ok := sb.(sandbox.Remover); ok {
		if _, err := rm.Remove(t.Context(), "rel-out"); err != nil {
			t.Errorf("remove an outward link: %v", err)
		}
		if _, err := rm.Remove(t.Context(), "abs-dir/self/environ"); err == nil {
			t.Error("remove through an outward link: no error")
		}
	}
}

func listErr(t *testing.T, sb sandbox.Sandbox, p string) error {
	_, err := sb.List(t.Context(), p, false)
	return err
}
