package sandbox

import (
	"path"
	"path/filepath"
	"strings"
)

// CleanPath turns a caller's path into a clean slash-separated path relative
// to the workspace, or fails with ErrPathEscape or ErrInvalidPath. It is
// lexical: symlinks are the backend's business (see
// Capabilities.ConfinedSymlinks).
//
// The rules, shared by every backend:
//   - "" and "." name the workspace itself and return ".";
//   - a relative path is cleaned ("a/./b/../c" is "a/c") and must not climb
//     above the workspace ("../x" and "a/../../x" escape);
//   - an absolute path is accepted only when it is workdir or lies under
//     it, so a model that saw "/workspace" in a command's output can use
//     "/workspace/a.txt"; any other absolute path escapes;
//   - a path with a NUL byte is invalid.
func CleanPath(workdir, p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", ErrInvalidPath
	}
	if p == "" {
		return ".", nil
	}
	if path.IsAbs(p) {
		p = path.Clean(p)
		wd := path.Clean(workdir)
		switch {
		case workdir == "" || !path.IsAbs(wd):
			return "", ErrPathEscape
		case p == wd:
			return ".", nil
		case wd == "/":
			return p[1:], nil
		case strings.HasPrefix(p, wd+"/"):
			return p[len(wd)+1:], nil
		default:
			return "", ErrPathEscape
		}
	}
	p = path.Clean(p)
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", ErrPathEscape
	}
	return p, nil
}

// RelUnder returns p relative to root when p is root or lies below it,
// as written: both are compared lexically, absolute or both relative,
// with no symlink resolved (resolve them first where links matter).
func RelUnder(root, p string) (string, bool) {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}
