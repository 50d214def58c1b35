package jsonl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gorath/rath/events"
)

// ErrPlacement is matched by the errors of UnderRoots' policy.
var ErrPlacement = errors.New("jsonl: placement not accepted")

// UnderRoots returns an Options.Placement policy that accepts the local
// and bwrap backends on an absolute directory inside one of roots (after
// resolving symbolic links, of the roots and of the part of the spec that
// exists), and nothing else: not "/", not a relative path (relative to
// what?), not a path that climbs out with "..", not another backend's
// spec, whose meaning this package cannot check.
func UnderRoots(roots ...string) func(events.Placement) error {
	var clean []string
	for _, r := range roots {
		if abs, err := filepath.Abs(r); err == nil {
			clean = append(clean, resolve(abs))
		}
	}
	return func(p events.Placement) error {
		if p.Backend != "local" && p.Backend != "bwrap" {
			return fmt.Errorf("%w: backend %q (only local and bwrap workspaces can be checked)", ErrPlacement, p.Backend)
		}
		if !filepath.IsAbs(p.Spec) {
			return fmt.Errorf("%w: %s workspace %q is not an absolute path", ErrPlacement, p.Backend, p.Spec)
		}
		spec := resolve(filepath.Clean(p.Spec))
		for _, r := range clean {
			if rel, err := filepath.Rel(r, spec); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
				return nil
			}
		}
		return fmt.Errorf("%w: %s workspace %s is not inside %s", ErrPlacement, p.Backend, p.Spec, strings.Join(roots, ", "))
	}
}

// resolve follows the symbolic links of the longest existing prefix of
// path, so a link inside a root that points out of it is seen for what it
// is.
func resolve(path string) string {
	rest := ""
	for p := path; ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil {
			if r, err := filepath.EvalSymlinks(p); err == nil {
				return filepath.Join(r, rest)
			}
			return path
		}
		if p == filepath.Dir(p) {
			return path
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}
