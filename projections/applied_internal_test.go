package projections

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"slices"
	"testing"
)

// A rebuild decodes only the payloads of appliedPayloads: a case added to
// apply's switch and not to the list would be skipped by every rebuild.
// The list names exactly the types apply's switch does.
func TestAppliedPayloads_AreApplysCases(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "projector.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var cases []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "apply" || fn.Recv == nil {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			cc, ok := n.(*ast.CaseClause)
			if !ok {
				return true
			}
			for _, e := range cc.List {
				if star, ok := e.(*ast.StarExpr); ok {
					if sel, ok := star.X.(*ast.SelectorExpr); ok {
						cases = append(cases, sel.Sel.Name)
					}
				}
			}
			return true
		})
	}
	var listed []string
	for _, p := range appliedPayloads {
		listed = append(listed, reflect.TypeOf(p).Name())
	}
	slices.Sort(listed)
	slices.Sort(cases)
	if cases = slices.Compact(cases); len(cases) == 0 || !slices.Equal(cases, listed) {
		t.Fatalf("apply's cases:  %v\nappliedPayloads: %v", cases, listed)
	}
}
