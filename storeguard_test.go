package rath_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
)

// A workspace that holds the store, lies inside it or is it is refused
// both where a session is placed and where the pool opens a sandbox, so
// no sandboxed model can write the log.
func TestRuntime_WorkspaceOverlappingStoreRefused(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// store and workspace, relative to a fresh directory
		store, workspace string
	}{
		{"workspace holds the store", "ws/.rath", "ws"},
		{"workspace is the store", "st", "st"},
		{"workspace inside the store", "st", "st/ws"},
		{"workspace not yet created inside the store", "st", "st/new/ws"},
		{"through a symlink", "real/.rath", "link"},
		{"through a dot path", "ws/.rath", "ws/sub/.."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			os.MkdirAll(filepath.Join(base, "real"), 0o755)
			os.MkdirAll(filepath.Join(base, "ws", "sub"), 0o755)
			if err := os.Symlink(filepath.Join(base, "real"), filepath.Join(base, "link")); err != nil {
				t.Fatal(err)
			}
			rt, err := rath.Open(ctx, filepath.Join(base, tc.store))
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			ws := filepath.Join(base, tc.workspace)
			s, err := rt.NewUserSession(ctx, "x")
			if err != nil {
				t.Fatal(err)
			}
			for _, backend := range []string{"local", "bwrap"} {
				_, err = s.To(ctx, backend, ws)
				var oe *rath.StoreOverlapError
				if !errors.As(err, &oe) || !errors.Is(err, rath.ErrWorkspaceHoldsStore) {
					t.Fatalf("To(%s, %s): %v, want a *StoreOverlapError", backend, ws, err)
				}
				if !strings.Contains(err.Error(), oe.Workspace) || !strings.Contains(err.Error(), oe.Store) || filepath.Base(oe.Store) != filepath.Base(tc.store) {
					t.Fatalf("message does not name both paths: %v", err)
				}
				// The library path that skips To: the pool itself.
				if _, err := rt.Sandboxes().Get(ctx, events.Placement{Backend: backend, Spec: ws}); !errors.Is(err, rath.ErrWorkspaceHoldsStore) {
					t.Fatalf("pool Get(%s, %s): %v", backend, ws, err)
				}
			}
			if _, err := os.Stat(filepath.Join(base, tc.workspace)); tc.name == "workspace not yet created inside the store" && err == nil {
				t.Fatalf("the refused workspace was created")
			}
		})
	}
	// Apart, and a remote backend's spec, are fine.
	rt, err := rath.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	s, _ := rt.NewUserSession(ctx, "x")
	if s, err = s.To(ctx, "local", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.To(ctx, "opensandbox", "python:3.12"); err != nil {
		t.Fatal(err)
	}
}
