package shellgate

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Result is what Inspect reads in a command.
type Result struct {
	// Commands is the text of each simple command, its words after quote
	// removal and brace expansion joined by single spaces; a part that is
	// only known at run time ($x, $(…)) keeps its source form.
	Commands []string
	// Unknown says, one entry per finding, what cannot be known before
	// the command runs. Empty means the commands are all there is.
	Unknown []string
}

// maxDepth bounds the nesting of sh -c and eval strings read as code.
const maxDepth = 8

// maxFields bounds the words one brace expansion may produce.
const maxFields = 1024

// Inspect reads cmd as the shell would. It never runs anything.
func Inspect(cmd string) Result {
	var r Result
	r.inspect(cmd, 0)
	return r
}

func (r *Result) unknown(format string, args ...any) {
	why := fmt.Sprintf(format, args...)
	for _, u := range r.Unknown {
		if u == why {
			return
		}
	}
	r.Unknown = append(r.Unknown, why)
}

func (r *Result) inspect(cmd string, depth int) {
	if depth > maxDepth {
		r.unknown("shell code nested deeper than %d levels", maxDepth)
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(cmd), "")
	if err != nil {
		r.unknown("the shell cannot parse it (%v)", err)
		return
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			r.unknown("command substitution %s", show(n))
		case *syntax.ProcSubst:
			r.unknown("process substitution %s", show(n))
		case *syntax.ArithmExp:
			r.arithm(n.X, n)
		case *syntax.ArithmCmd:
			r.arithm(n.X, n)
		case *syntax.CStyleLoop:
			r.arithm(n.Init, n)
			r.arithm(n.Cond, n)
			r.arithm(n.Post, n)
		case *syntax.LetClause:
			for _, x := range n.Exprs {
				r.arithm(x, n)
			}
		case *syntax.ParamExp:
			if n.Index != nil {
				r.arithm(n.Index, n)
			}
			if n.Slice != nil {
				r.arithm(n.Slice.Offset, n)
				r.arithm(n.Slice.Length, n)
			}
		case *syntax.BinaryTest:
			if isArithmTest(n.Op) {
				r.testOperand(n.X, n)
				r.testOperand(n.Y, n)
			}
		case *syntax.UnaryTest:
			if n.Op == syntax.TsVarSet {
				r.unknown("a variable test whose subscript bash evaluates: %s", show(n))
			}
		case *syntax.Assign:
			if n.Index != nil {
				r.arithm(n.Index, n)
			}
		case *syntax.DeclClause:
			r.decl(n)
		case *syntax.CallExpr:
			r.call(n, depth)
		}
		return true
	})
}

// isArithmTest reports the [[ ]] operators that evaluate their operands as
// arithmetic (a variable's value included).
func isArithmTest(op syntax.BinTestOperator) bool {
	switch op {
	case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
		return true
	}
	return false
}

func (r *Result) testOperand(x syntax.TestExpr, at syntax.Node) {
	if w, ok := x.(*syntax.Word); ok {
		if s, lit := word(w); lit && isNumber(s) {
			return
		}
	}
	r.unknown("an arithmetic comparison of a value known only at run time: %s", show(at))
}

// arithm flags arithmetic that reads anything but numbers: bash evaluates
// a variable's value in arithmetic as an expression, and a subscript in it
// can hold a command substitution.
func (r *Result) arithm(x syntax.ArithmExpr, at syntax.Node) {
	if x == nil {
		return
	}
	known := true
	syntax.Walk(x, func(n syntax.Node) bool {
		if w, ok := n.(*syntax.Word); ok {
			if s, lit := word(w); !lit || !isNumber(s) && s != "@" && s != "*" {
				known = false
			}
			return false
		}
		return true
	})
	if !known {
		r.unknown("arithmetic on a value known only at run time: %s", show(at))
	}
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '#' || c == '_' || c == '@') {
			return false
		}
	}
	// A digit first: 10, 0x1f, 16#ff, 2#101. A name (a variable) starts
	// with a letter or underscore.
	return s[0] >= '0' && s[0] <= '9'
}

// decl reads declare, local, export, readonly, typeset: a name that is not
// literal may carry a subscript bash evaluates.
func (r *Result) decl(d *syntax.DeclClause) {
	words := []string{d.Variant.Value}
	for _, a := range d.Args {
		if a.Naked && a.Value != nil {
			s, lit := word(a.Value)
			if !lit {
				r.unknown("%s of a name known only at run time: %s", d.Variant.Value, show(d))
			}
			words = append(words, s)
			continue
		}
		words = append(words, assign(a))
	}
	r.Commands = append(r.Commands, strings.Join(words, " "))
}

func assign(a *syntax.Assign) string {
	var b strings.Builder
	if a.Name != nil {
		b.WriteString(a.Name.Value)
	}
	if a.Index != nil {
		b.WriteString("[" + show(a.Index) + "]")
	}
	if a.Append {
		b.WriteString("+")
	}
	if !a.Naked {
		b.WriteString("=")
	}
	if a.Value != nil {
		s, _ := word(a.Value)
		b.WriteString(s)
	}
	if a.Array != nil {
		b.WriteString(show(a.Array))
	}
	return b.String()
}

// call reads one simple command.
func (r *Result) call(c *syntax.CallExpr, depth int) {
	var words []string
	for _, a := range c.Assigns {
		words = append(words, assign(a))
	}
	var fields []string
	var lits []bool // per field: literal, no pattern
	for i, w := range c.Args {
		expanded, err := braces(w)
		if err != nil {
			r.unknown("a brace expansion too large to read: %s", show(w))
			continue
		}
		for _, ew := range expanded {
			s, lit := word(ew)
			if i == 0 && len(fields) == 0 && !lit {
				r.unknown("a command name known only at run time: %s", show(w))
			}
			if i == 0 && len(fields) == 0 && hasGlob(ew) {
				r.unknown("a command name that is a pattern: %s", show(w))
			}
			if strings.Contains(s, "$(") || strings.Contains(s, "`") {
				r.unknown("text the shell may evaluate a second time: %s", show(w))
			}
			fields, lits = append(fields, s), append(lits, lit && !hasGlob(ew))
		}
	}
	words = append(words, fields...)
	if len(words) > 0 {
		r.Commands = append(r.Commands, strings.Join(words, " "))
	}
	if len(fields) > 0 {
		r.program(fields, lits, depth)
	}
}

// braces expands a word's brace expressions ({a,b}, {1..3}).
func braces(w *syntax.Word) ([]*syntax.Word, error) {
	w2 := &syntax.Word{Parts: append([]syntax.WordPart(nil), w.Parts...)}
	if !syntax.SplitBraces(w2) {
		return []*syntax.Word{w}, nil
	}
	var out []*syntax.Word
	for ew, err := range expand.BracesSeq(nil, w2) {
		if err != nil {
			return nil, err
		}
		if out = append(out, ew); len(out) > maxFields {
			return nil, fmt.Errorf("more than %d words", maxFields)
		}
	}
	return out, nil
}

// word returns w after quote removal, and whether it is fully literal.
// A part known only at run time keeps its source text.
func word(w *syntax.Word) (string, bool) {
	var b strings.Builder
	lit := parts(&b, w.Parts, false)
	return b.String(), lit
}

func parts(b *strings.Builder, ps []syntax.WordPart, quoted bool) bool {
	lit := true
	for _, p := range ps {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value, quoted))
		case *syntax.SglQuoted:
			v := p.Value
			if p.Dollar { // $'…': ANSI-C escapes, $'\x72m' is rm
				v, _, _ = expand.Format(nil, v, nil)
			}
			b.WriteString(v)
		case *syntax.DblQuoted:
			if !parts(b, p.Parts, true) {
				lit = false
			}
		case *syntax.BraceExp:
			b.WriteString(show(p))
			lit = false
		default: // parameter, command, arithmetic, process substitution, extglob
			b.WriteString(show(p))
			lit = false
		}
	}
	return lit
}

// unescape removes the backslashes the shell removes: any escaped
// character outside quotes, only $ ` " \ and newline inside double quotes.
func unescape(s string, quoted bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		next := s[i+1]
		switch {
		case next == '\n':
			i++
		case !quoted || strings.IndexByte("$`\"\\", next) >= 0:
			b.WriteByte(next)
			i++
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// hasGlob reports an unquoted, unescaped pattern character in w.
func hasGlob(w *syntax.Word) bool {
	for _, p := range w.Parts {
		l, ok := p.(*syntax.Lit)
		if !ok {
			if _, eg := p.(*syntax.ExtGlob); eg {
				return true
			}
			continue
		}
		for i := 0; i < len(l.Value); i++ {
			switch l.Value[i] {
			case '\\':
				i++
			case '*', '?':
				return true
			case '[': // a pattern only with its ]
				if strings.Contains(l.Value[i+1:], "]") {
					return true
				}
			}
		}
	}
	return false
}

func show(n syntax.Node) string {
	var b strings.Builder
	if err := syntax.NewPrinter(syntax.Minify(true)).Print(&b, n); err != nil {
		return fmt.Sprintf("%T", n)
	}
	return strings.TrimSpace(b.String())
}

// programs
var (
	// wrappers run the program named in their arguments.
	wrappers = set("sudo", "doas", "env", "nice", "nohup", "time", "timeout", "stdbuf", "setsid",
		"command", "builtin", "exec", "chroot", "ionice", "taskset", "strace", "ltrace", "busybox",
		"unshare", "nsenter", "chrt", "flock", "caffeinate", "systemd-run", "firejail", "bwrap")
	shells = set("sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "fish", "rbash", "csh", "tcsh")
	// inline lists, per interpreter, the short options whose argument is
	// code, and the long ones.
	inline = map[string][]string{
		"python": {"c"}, "pypy": {"c"}, "perl": {"e", "E"}, "ruby": {"e"}, "node": {"e", "p", "--eval", "--print"},
		"nodejs": {"e", "p", "--eval", "--print"}, "bun": {"e", "--eval", "--print"}, "deno": {"eval"},
		"php": {"r", "a"}, "lua": {"e"}, "luajit": {"e"}, "Rscript": {"e"}, "R": {"e"}, "osascript": {"e"},
		"pwsh": {"c", "Command", "EncodedCommand", "e"}, "powershell": {"c", "Command", "EncodedCommand", "e"},
		"tclsh": {}, "wish": {}, "jshell": {}, "irb": {}, "ghci": {}, "julia": {"e", "E"}, "racket": {"e"},
		"guile": {"c"}, "sbcl": {"--eval"}, "groovy": {"e"}, "scala": {"e"}, "kotlinc": {"e"}, "gdb": {"ex", "batch"},
		"vim": {"c"}, "vi": {"c"}, "nvim": {"c"}, "ex": {"c"}, "emacs": {"--eval"},
	}
	// always are programs whose code is always on the command line or
	// that run commands per input.
	always = map[string]string{
		"awk": "awk runs the program given inline", "gawk": "awk runs the program given inline",
		"mawk": "awk runs the program given inline", "nawk": "awk runs the program given inline",
		"xargs": "xargs runs commands built from its input", "parallel": "parallel runs commands built from its input",
		"source": "source runs a file in this shell", ".": ". runs a file in this shell",
		"alias": "an alias is code run later", "trap": "trap runs code later",
		"watch": "watch runs its arguments as shell code", "ssh": "ssh runs its arguments as shell code elsewhere",
		"su": "su runs a shell", "hash": "hash -p renames a program", "enable": "enable loads builtins", "script": "script runs a shell", "expect": "expect runs a program given inline",
	}
	// nameTakers are builtins whose arguments are variable names: bash
	// evaluates a subscript in a name.
	// (declare and its kind are read as DeclClause; printf, test and [
	// only with -v.)
	nameTakers = set("read", "unset", "mapfile", "readarray", "getopts", "wait", "shift")
)

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// program applies what is known of the programs a command runs: a
// wrapper's arguments are searched for the program it runs.
func (r *Result) program(fields []string, lits []bool, depth int) {
	for i := 0; i < len(fields); i++ {
		name := path.Base(fields[i])
		if i > 0 && !lits[i] {
			r.unknown("a word known only at run time after %s: %s", path.Base(fields[0]), fields[i])
		}
		switch {
		case name == "env" && slices.ContainsFunc(fields[i+1:], func(f string) bool {
			return strings.HasPrefix(f, "-S") || strings.HasPrefix(f, "--split-string")
		}):
			r.unknown("env -S splits a string into a command")
			return
		case name == "eval":
			r.inspect(strings.Join(fields[i+1:], " "), depth+1)
			return
		case shells[name]:
			r.shell(name, fields[i+1:], depth)
			return
		case always[name] != "":
			r.unknown("%s", always[name])
			return
		case name == "find":
			for _, f := range fields[i+1:] {
				switch f {
				case "-exec", "-execdir", "-ok", "-okdir", "-delete":
					r.unknown("find %s acts on each file it finds", f)
				}
			}
			return
		case interpreter(name) != "":
			r.interp(interpreter(name), fields[i+1:])
			return
		case nameTakers[name] || (name == "printf" || name == "test" || name == "[") && slices.Contains(fields[i+1:], "-v"):
			for j := i + 1; j < len(fields); j++ {
				if !lits[j] {
					r.unknown("%s of a name known only at run time: %s", name, fields[j])
				}
			}
			return
		case i == 0 && !wrappers[name]:
			return // an ordinary program: its words are all the gate sees
		}
	}
}

// interpreter returns the key of inline for name (python3.12 is python).
func interpreter(name string) string {
	if _, ok := inline[name]; ok {
		return name
	}
	for _, p := range []string{"python", "pypy", "perl", "ruby", "php", "lua", "node"} {
		if strings.HasPrefix(name, p) && strings.Trim(name[len(p):], "0123456789.") == "" {
			return p
		}
	}
	return ""
}

// shell reads a shell's arguments: -c code is read as a command, and a
// shell with no script reads its commands from its input.
func (r *Result) shell(name string, args []string, depth int) {
	inlineCode, stdin := false, true
	for _, a := range args {
		switch {
		case a == "-" || a == "--":
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
			if strings.ContainsAny(a[1:], "c") {
				inlineCode = true
			}
			if strings.ContainsAny(a[1:], "s") {
				r.unknown("%s -s reads its commands from its input", name)
			}
		default:
			stdin = false
		}
	}
	if !inlineCode {
		if stdin {
			r.unknown("%s reads its commands from its input", name)
		}
		return
	}
	// Every operand may be the code (options such as -o take one); read
	// them all, which at worst asks about a script's own arguments.
	for _, a := range args {
		if !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+") {
			r.inspect(a, depth+1)
		}
	}
}

// interp asks about an interpreter given code inline or on its input.
func (r *Result) interp(name string, args []string) {
	operand := false
	for _, a := range args {
		switch {
		case a == "-":
			r.unknown("%s reads its program from its input", name)
		case strings.HasPrefix(a, "--"):
			for _, o := range inline[name] {
				if strings.HasPrefix(o, "--") && (a == o || strings.HasPrefix(a, o+"=")) {
					r.unknown("%s %s runs code given inline", name, o)
				}
			}
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
			for _, o := range inline[name] {
				if !strings.HasPrefix(o, "--") && (len(o) == 1 && strings.Contains(a[1:], o) || a[1:] == o) {
					r.unknown("%s -%s runs code given inline", name, o)
				}
			}
		default:
			if name == "deno" && a == "eval" {
				r.unknown("deno eval runs code given inline")
			}
			operand = true
		}
	}
	if !operand {
		r.unknown("%s reads its program from its input", name)
	}
}
