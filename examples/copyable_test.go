package examples_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Each example can be copied into a user's own module as it is: it
// imports rath's public packages only, never an internal one (which Go
// refuses to import from outside the repository).
func TestExamples_ImportNoInternalPackage(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("[0-9]*", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples found: %v", err)
	}
	for _, f := range files {
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal") {
				t.Errorf("%s imports %s: a user's module could not build it", f, path)
			}
		}
	}
}
