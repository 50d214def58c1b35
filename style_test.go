package rath_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// packageDirs lists the directories holding non-test Go files.
func packageDirs(t *testing.T) map[string][]string {
	t.Helper()
	dirs := map[string][]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			dirs[filepath.Dir(path)] = append(dirs[filepath.Dir(path)], path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// Every library package says what it owns in a doc.go.
func TestStyle_EveryPackageHasDocGo(t *testing.T) {
	for dir := range packageDirs(t) {
		if dir == "." || strings.HasPrefix(dir, "cmd") || strings.HasPrefix(dir, "examples") {
			continue // the root package documents itself in rath.go; commands in main.go
		}
		if _, err := os.Stat(filepath.Join(dir, "doc.go")); err != nil {
			t.Errorf("package %s has no doc.go", dir)
		}
	}
}

// The event log imports nothing else from rath (docs/ARCHITECTURE.md), and sandbox
// and memory do not import flow.
func TestStyle_ImportDirection(t *testing.T) {
	forbidden := map[string][]string{
		"events":  {"github.com/gorath/rath"},
		"sandbox": {"github.com/gorath/rath/flow"},
		"memory":  {"github.com/gorath/rath/flow"},
	}
	fset := token.NewFileSet()
	for dir, files := range packageDirs(t) {
		top := strings.Split(filepath.ToSlash(dir), "/")[0]
		bans, ok := forbidden[top]
		if !ok {
			continue
		}
		for _, f := range files {
			af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				for _, ban := range bans {
					if path == ban || strings.HasPrefix(path, ban+"/") {
						t.Errorf("%s imports %s", f, path)
					}
				}
			}
		}
	}
}
