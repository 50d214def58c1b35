package rath_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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

// allowedImports is the dependency policy, in the manner of the standard
// library's deps test: for each package, the rath packages it may import.
// A package that is not listed, or an import that is not allowed, fails
// TestStyle_AllowedImports; change this table deliberately, with the
// layering in docs/ARCHITECTURE.md in mind. Tests and examples are free.
var allowedImports = map[string][]string{
	// The log and its schema are the bottom: nothing of ours beneath them
	// but a leaf helper.
	"internal/stmtcache":  {},
	"internal/scratchopt": {},
	"events":              {},
	"eventlog":            {"events", "internal/stmtcache", "keyring"},
	"migrations":          {},
	"signkey":             {},
	"keyring":             {},
	"bundle":              {"events", "eventlog", "signkey"},
	"cmd/rathverify":      {},
	"secret":              {"events"},
	"checkpoint":          {"events", "eventlog", "signkey"},

	"projections": {"events", "eventlog", "migrations", "internal/stmtcache"},
	"session":     {"events", "eventlog", "projections", "secret"},
	"memory":      {"events", "eventlog", "session"}, // never flow: flow uses memory
	"approval":    {"events", "eventlog", "internal/textsafe"},
	"access":      {"events", "eventlog"},

	"sandbox":                 {"events", "eventlog"}, // never flow
	"sandbox/internal/proc":   {"sandbox"},
	"sandbox/internal/hostfs": {"sandbox"},
	"sandbox/internal/host":   {"sandbox", "sandbox/internal/hostfs", "sandbox/internal/proc"},
	"sandbox/local":           {"sandbox", "sandbox/internal/host", "sandbox/internal/hostfs", "sandbox/internal/proc"},
	"sandbox/bwrap":           {"sandbox", "sandbox/internal/host", "sandbox/internal/hostfs", "sandbox/internal/proc"},
	"sandbox/opensandbox":     {"sandbox"},
	"sandbox/sandboxtest":     {"sandbox"},

	"sandbox/opensandbox/opensandboxtest": {"sandbox/internal/proc"},

	"flow/model":                    {"events"},
	"flow/model/internal/httperr":   {"flow/model"},
	"flow/model/internal/textsplit": {},
	"flow/model/openai":             {"events", "flow/model", "flow/model/internal/httperr"},
	"flow/model/anthropic":          {"events", "flow/model", "flow/model/internal/httperr"},
	"flow/model/scripted":           {"events", "flow/model", "flow/model/internal/textsplit"},
	"flow/model/modeltest":          {"events", "flow/model", "flow/model/internal/textsplit"},
	"flow":                          {"events", "eventlog", "flow/model", "internal/oracle", "flow/model/scripted", "memory", "secret", "session", "approval", "internal/shellgate"},
	"flow/builtin":                  {"events", "flow", "sandbox", "session"},
	"flow/mcptool":                  {"events", "eventlog", "flow", "internal/httporigin", "secret", "session"},
	"memory/memorytest":             {"events", "eventlog", "memory", "session"},
	"memory/openaiembed":            {"memory"},
	"internal/httporigin":           {},
	"memory/openviking":             {"internal/httporigin"}, // an HTTP client only
	"memory/openvikingtest":         {},
	"memory/vikingmem":              {"events", "eventlog", "memory", "memory/openviking", "session"},
	"session/jsonl":                 {"events", "eventlog", "projections", "session"},
	"telemetry":                     {"events", "eventlog", "flow", "flow/model"},
	"telemetry/otlptest":            {},

	".": {"checkpoint", "events", "eventlog", "flow", "flow/builtin", "flow/mcptool", "flow/model", "flow/model/anthropic", "flow/model/openai", "flow/model/scripted", "internal/scratchopt", "keyring", "memory", "memory/vikingmem", "migrations", "projections", "sandbox", "sandbox/bwrap", "sandbox/local", "sandbox/opensandbox", "secret", "session", "signkey", "telemetry"},

	"replay":                              {".", "approval", "events", "eventlog", "flow", "flow/builtin", "flow/model", "internal/oracle", "internal/scratchopt", "sandbox", "session"},
	"retention":                           {".", "bundle", "checkpoint", "events", "eventlog", "signkey"},
	"replay/internal/renametest":          {},
	"replay/internal/renametest/recorded": {"flow", "session"},
	"replay/internal/renametest/renamed":  {"flow", "session"},
	"replay/internal/renametest/pinned":   {"flow", "session"},
	// The fleet reads a run's state from the read model (projections),
	// not by folding its streams, and shows statuses in projections' words.
	"fleet":               {".", "approval", "events", "eventlog", "flow", "flow/mcptool", "flow/model", "keyring", "migrations", "projections", "replay", "sandbox", "session"},
	"eval":                {".", "events", "eventlog", "flow", "flow/model", "projections", "replay"},
	"dossier":             {".", "approval", "events", "eventlog", "flow", "flow/model", "internal/textsafe", "projections", "replay", "session"},
	"internal/demo":       {".", "events", "eventlog", "flow", "flow/builtin", "flow/model/scripted", "dossier", "memory", "replay", "sandbox", "session"},
	"internal/oracle":     {"events", "flow/model"},
	"internal/pgtest":     {},
	"internal/netdelay":   {},
	"internal/proccpu":    {},
	"internal/queryplan":  {},
	"internal/stalekeys":  {"keyring"},
	"keyring/keyringtest": {"keyring"},
	"internal/rathbin":    {},
	"internal/oidctest":   {},
	"internal/console":    {".", "access", "approval", "eval", "events", "eventlog", "internal/jsonview", "fleet", "flow", "dossier", "internal/textsafe", "memory", "projections", "replay", "sandbox", "session", "telemetry"},
	"internal/tmpfs":      {},
	"internal/jsonview":   {".", "checkpoint", "events", "eventlog", "projections"},
	"internal/shellgate":  {},
	"internal/textsafe":   {},
	"internal/storetest":  {".", "events", "eventlog", "flow", "flow/model/scripted", "internal/stalekeys", "keyring", "keyring/keyringtest", "projections", "replay", "retention", "session"},

	"cmd/rath/cli":  {".", "access", "approval", "bundle", "checkpoint", "events", "eventlog", "fleet", "flow", "flow/builtin", "flow/mcptool", "flow/model", "flow/model/scripted", "internal/console", "internal/demo", "dossier", "eval", "internal/jsonview", "internal/textsafe", "keyring", "memory", "projections", "replay", "retention", "sandbox", "session", "session/jsonl", "signkey", "telemetry"},
	"cmd/rath":      {"cmd/rath/cli"},
	"cmd/chatbench": {".", "events"},
	// fleetbench drives the rath binary; it reads the log as a subscriber,
	// opening sealed content with the key-encryption key it was given.
	"cmd/fleetbench": {"events", "eventlog", "fleet", "internal/netdelay", "internal/pgtest", "internal/proccpu", "keyring"},
}

// Each package imports only the rath packages allowedImports lets it.
func TestStyle_AllowedImports(t *testing.T) {
	const module = "github.com/gorath/rath"
	fset := token.NewFileSet()
	for dir, files := range packageDirs(t) {
		pkg := filepath.ToSlash(dir)
		if strings.HasPrefix(pkg, "examples") {
			continue // programs that show the public API; they may use all of it
		}
		allowed, ok := allowedImports[pkg]
		if !ok {
			t.Errorf("package %s is not in allowedImports: add it with the rath packages it may import", pkg)
			continue
		}
		for _, f := range files {
			af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if path != module && !strings.HasPrefix(path, module+"/") {
					continue
				}
				rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
				if rel == "" {
					rel = "."
				}
				if !slices.Contains(allowed, rel) {
					t.Errorf("%s imports %s, which allowedImports does not allow for %s", f, path, pkg)
				}
			}
		}
	}
}

// The fleet acts on a run's state as the read model holds it
// (projections.Reader.RunState, one query), never on the run's streams
// read and folded by hand: one read of a run's state, from one place.
func TestStyle_FleetReadsTheReadModel(t *testing.T) {
	reads := []string{"Read", "ReadStream", "ReadStreams", "ReadStreamUntil", "ReadRun", "StreamVersion", "Decode"}
	fset := token.NewFileSet()
	for _, f := range packageDirs(t)["fleet"] {
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || !slices.Contains(reads, sel.Sel.Name) {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "rand" {
				return true // crypto/rand.Read
			}
			t.Errorf("%s: fleet calls %s: read the run's state with projections.Reader.RunState", fset.Position(sel.Pos()), sel.Sel.Name)
			return true
		})
	}
}

// rath.Options and rath.StoreOptions state, on every field, its default or
// what zero means, and Options stays short: store tuning goes to
// StoreOptions, and settings for the module's own use to fields of
// internal types.
func TestStyle_OptionsStateTheirDefaults(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "rath.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	says := []string{"default", "Nil means", "Zero means", "zero value", "Empty", "Required", "nil (the", "False"}
	fields := map[string]int{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, spec := range g.Specs {
			ts, ok := spec.(*ast.TypeSpec)
			if !ok || (ts.Name.Name != "Options" && ts.Name.Name != "StoreOptions") {
				continue
			}
			for _, fld := range ts.Type.(*ast.StructType).Fields.List {
				fields[ts.Name.Name] += len(fld.Names)
				doc := strings.Join(strings.Fields(fld.Doc.Text()), " ")
				if !slices.ContainsFunc(says, func(w string) bool { return strings.Contains(doc, w) }) {
					t.Errorf("%s.%s: its doc states no default: %q", ts.Name.Name, fld.Names[0].Name, doc)
				}
			}
		}
	}
	if fields["Options"] == 0 || fields["StoreOptions"] == 0 {
		t.Fatalf("found fields %v in rath.go", fields)
	}
	if n := fields["Options"]; n > 20 {
		t.Errorf("rath.Options has %d fields: group tuning into a sub-struct", n)
	}
}

// The log's two databases are dialects behind one interface
// (eventlog/dialect.go), each in its own files, not a flag its methods
// test: eventlog names no pg, and its Store has no Postgres for callers
// to ask.
func TestStyle_LogHasDialectsNotFlags(t *testing.T) {
	fset := token.NewFileSet()
	declared := map[string]string{}
	for _, f := range packageDirs(t)["eventlog"] {
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Ident:
				if n.Name == "pg" {
					t.Errorf("%s: eventlog names pg: put what differs behind the dialect interface", fset.Position(n.Pos()))
				}
			case *ast.FuncDecl:
				if n.Recv != nil && n.Name.Name == "Postgres" {
					t.Errorf("%s: eventlog's Postgres method lets callers switch on the database: give them a method that says what it does", fset.Position(n.Pos()))
				}
			case *ast.TypeSpec:
				declared[n.Name.Name] = filepath.Base(f)
			}
			return true
		})
	}
	for typ, file := range map[string]string{"dialect": "dialect.go", "sqliteDialect": "dialect_sqlite.go", "postgresDialect": "dialect_postgres.go"} {
		if declared[typ] != file {
			t.Errorf("eventlog declares %s in %q, want %s", typ, declared[typ], file)
		}
	}
}

// No package but the log asks which database the log is on.
func TestStyle_NoOneAsksWhichDatabase(t *testing.T) {
	fset := token.NewFileSet()
	for dir, files := range packageDirs(t) {
		if filepath.ToSlash(dir) == "eventlog" {
			continue
		}
		for _, f := range files {
			af, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(af, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Postgres" && len(call.Args) == 0 {
						t.Errorf("%s: calls .Postgres(): ask the store for what it does (Now, NowSQL, DB().Rebind) instead", fset.Position(call.Pos()))
					}
				}
				return true
			})
		}
	}
}

// contextAppendInputs are the context functions that once changed what
// an append does unseen: the run, the lease and carried writes are
// eventlog.Scope now, stated where an append is made.
var contextAppendInputs = []string{"ContextWithRun", "RunFromContext", "ContextWithLease", "LeaseFromContext", "ContextWithCarried", "CarriedFromContext"}

// logContextReads are the context values the log may read: the subject
// (content sealed under a person's key, for a run and what is written
// beside it) and the events an AppendTx function's own append wrote,
// which the log hands to it.
var logContextReads = []string{"SubjectFromContext", "appendedFromContext", "appendedKey"}

// An append's run, lease and carried write are its inputs, not context
// values: no package declares a context function for them, and the log
// reads no context value but logContextReads.
func TestStyle_AppendInputsAreExplicit(t *testing.T) {
	fset := token.NewFileSet()
	for dir, files := range packageDirs(t) {
		inLog := filepath.ToSlash(dir) == "eventlog"
		for _, f := range files {
			af, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(af, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.FuncDecl:
					if slices.Contains(contextAppendInputs, n.Name.Name) {
						t.Errorf("%s: declares %s: make it a field of eventlog.Scope, given to the append", fset.Position(n.Pos()), n.Name.Name)
					}
				case *ast.CallExpr:
					sel, ok := n.Fun.(*ast.SelectorExpr)
					if !ok || !inLog {
						break
					}
					name := sel.Sel.Name
					if name == "Value" && len(n.Args) == 1 {
						if lit, ok := n.Args[0].(*ast.CompositeLit); ok {
							if id, ok := lit.Type.(*ast.Ident); ok {
								name = id.Name
							}
						}
					} else if !strings.HasSuffix(name, "FromContext") {
						break
					}
					if !slices.Contains(logContextReads, name) {
						t.Errorf("%s: the log reads %s from the context: what changes an append is an argument of it (eventlog.Scope)", fset.Position(n.Pos()), name)
					}
				}
				return true
			})
		}
	}
}

// maxFileLines bounds a library file: past it, split by what the parts do.
const maxFileLines = 800

// No library file is longer than maxFileLines.
func TestStyle_NoLongFiles(t *testing.T) {
	for _, files := range packageDirs(t) {
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(b), "\n"); n > maxFileLines {
				t.Errorf("%s has %d lines (more than %d): split it", f, n, maxFileLines)
			}
		}
	}
}
