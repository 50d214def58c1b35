package rath

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/gorath/rath/events"
)

// ErrWorkspaceHoldsStore is matched by a *StoreOverlapError.
var ErrWorkspaceHoldsStore = errors.New("rath: the workspace and the store overlap")

// StoreOverlapError refuses a placement whose workspace directory holds
// the runtime's store, lies inside it, or is it: a sandboxed model could
// otherwise drop the triggers, rewrite events or delete the WAL. Both
// paths are resolved (absolute, symlinks followed).
type StoreOverlapError struct {
	Backend   string
	Workspace string
	Store     string
}

func (e *StoreOverlapError) Error() string {
	how := "contains the store"
	switch {
	case e.Workspace == e.Store:
		how = "is the store"
	case within(e.Workspace, e.Store):
		how = "is inside the store"
	}
	return fmt.Sprintf("rath: %s workspace %s %s %s: a sandboxed model could rewrite the log; put the store (--dir) and the workspace apart",
		e.Backend, e.Workspace, how, e.Store)
}

// Is makes errors.Is(err, ErrWorkspaceHoldsStore) true.
func (e *StoreOverlapError) Is(target error) bool { return target == ErrWorkspaceHoldsStore }

// hostDirBackends are the built-in backends whose spec is a host
// directory that the sandbox can write.
var hostDirBackends = map[string]bool{"local": true, "bwrap": true}

// storeGuard returns the check that refuses a host-directory placement
// overlapping the store directory dir.
func storeGuard(dir string) (func(backend, spec string) error, error) {
	store, err := resolvePath(dir)
	if err != nil {
		return nil, fmt.Errorf("rath: open: resolve %s: %w", dir, err)
	}
	return func(backend, spec string) error {
		if !hostDirBackends[backend] || spec == "" {
			return nil
		}
		ws, err := resolvePath(spec)
		if err != nil {
			return nil // the backend reports a spec it cannot use
		}
		if ws == store || within(store, ws) || within(ws, store) {
			return &StoreOverlapError{Backend: backend, Workspace: ws, Store: store}
		}
		return nil
	}, nil
}

// placementGuard adapts a storeGuard to sandbox.WithPlacementCheck.
func placementGuard(check func(backend, spec string) error) func(events.Placement) error {
	return func(p events.Placement) error { return check(p.Backend, p.Spec) }
}

// resolvePath makes p absolute with symlinks resolved; a missing tail (a
// workspace the backend will create) is kept as written below its
// deepest existing ancestor, so it compares like the real path will.
func resolvePath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	var rest []string
	for cur := abs; ; {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(append([]string{real}, rest...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs, nil
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
		cur = parent
	}
}

// within reports whether path lies strictly below dir (both clean and
// absolute).
func within(path, dir string) bool {
	if dir == string(filepath.Separator) {
		return path != dir
	}
	return strings.HasPrefix(path, dir+string(filepath.Separator))
}
