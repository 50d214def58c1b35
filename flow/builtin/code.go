package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/session"
)

// language says how run_code runs one language inside the sandbox.
type language struct {
	name    string // canonical, as listed to the model
	program string // looked up in PATH inside the sandbox
	file    string // the source file's name
	setup   string // shell lines run first (may extend PATH)
	run     string // the command; $src is the source file
}

// Languages returns the languages run_code knows, by canonical name.
func Languages() []string { return []string{"python", "bash", "go", "node"} }

// languageFor resolves a language name or alias ("" means python, the
// Python OpenRath's default).
func languageFor(name string) (language, bool) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "", "python", "python3", "py":
		return language{name: "python", program: "python3", file: "main.py", run: `python3 "$src"`}, true
	case "bash", "sh", "shell":
		return language{name: "bash", program: "bash", file: "main.sh", run: `bash "$src"`}, true
	case "node", "javascript", "js", "nodejs":
		return language{name: "node", program: "node", file: "main.js", run: `node "$src"`}, true
	case "go", "golang":
		// The official tarball installs to /usr/local/go, which is not on
		// the sandboxes' default PATH. The caches go to the temporary
		// directory: HOME is the workspace, and a build cache there would
		// fill it (and the change tracking) with thousands of files.
		return language{name: "go", program: "go", file: "main.go",
			setup: `PATH="$PATH:/usr/local/go/bin"
export GOCACHE="${GOCACHE:-${TMPDIR:-/tmp}/rath-go-build}" GOPATH="${GOPATH:-${TMPDIR:-/tmp}/rath-gopath}" GOTOOLCHAIN=local GOFLAGS=-mod=mod
`,
			run: `go run "$src"`}, true
	}
	return language{}, false
}

// missingMark is what the script prints, alone on stderr, when the
// language's program is not in PATH; with exit status 127 it tells a
// missing interpreter from a program that exits 127 itself.
const missingMark = "rath-run-code: program not found: "

// script is the shell program that runs code: it checks for the language's
// program, writes the code to a file in a fresh temporary directory
// (outside the workspace, so it is no workspace change), runs it from the
// workspace root and removes the directory. The code travels in a quoted
// here-document, so nothing in it is expanded, whatever it holds; the
// delimiter is chosen not to occur in the code.
func (l language) script(code string) string {
	delim := "RATH_CODE_EOF"
	for i := 1; strings.Contains(code, delim); i++ {
		delim = fmt.Sprintf("RATH_CODE_EOF_%d", i)
	}
	if !strings.HasSuffix(code, "\n") {
		code += "\n"
	}
	var b strings.Builder
	b.WriteString(l.setup)
	fmt.Fprintf(&b, "command -v %s >/dev/null 2>&1 || { echo '%s%s' >&2; exit 127; }\n", l.program, missingMark, l.program)
	b.WriteString("d=$(mktemp -d \"${TMPDIR:-/tmp}/rath-code.XXXXXX\") || exit 126\n")
	b.WriteString("trap 'rm -rf \"$d\"' EXIT\n")
	fmt.Fprintf(&b, "src=\"$d/%s\"\n", l.file)
	fmt.Fprintf(&b, "cat > \"$src\" <<'%s'\n%s%s\n", delim, code, delim)
	b.WriteString(l.run)
	b.WriteByte('\n')
	return b.String()
}

type codeArgs struct {
	Code     string   `json:"code"`
	Language string   `json:"language"`
	Timeout  *float64 `json:"timeout"`
}

func (k *kit) codeSchema() string {
	return fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "code": {"type": "string", "description": "The program's source code."},
    "language": {"type": "string", "description": "One of %s.", "default": "python"},
    "timeout": {"type": "number", "description": "Seconds before the program is killed (default %g, at most %g).", "exclusiveMinimum": 0, "maximum": %g}
  },
  "required": ["code"],
  "additionalProperties": false
}`, strings.Join(Languages(), ", "), k.opts.CommandTimeout.Seconds(), k.opts.MaxCodeTimeout.Seconds(), k.opts.MaxCodeTimeout.Seconds())
}

func (k *kit) codeTool() (flow.Tool, error) {
	desc := "Run a program in the sandbox workspace (the working directory is the workspace root) and return its exit code, stdout and stderr. " +
		"Languages: " + strings.Join(Languages(), ", ") + ", when installed in the sandbox. Files it changes in the workspace are recorded."
	return flow.NewSchemaTool(RunCode, desc, json.RawMessage(k.codeSchema()), k.runCode,
		flow.WithToolTimeout(max(k.opts.CommandTimeout, k.opts.MaxCodeTimeout)+trackingGrace))
}

func (k *kit) runCode(ctx context.Context, s *session.Session, raw json.RawMessage) (flow.ToolResult, error) {
	var args codeArgs
	if err := decodeArgs(raw, &args); err != nil {
		return flow.ToolResult{}, err
	}
	sb, res, err := k.open(ctx, s, RunCode)
	if err != nil {
		return res, err
	}
	lang, ok := languageFor(args.Language)
	if !ok {
		return res, &flow.ToolError{Kind: flow.ToolErrFailed, Err: fmt.Errorf("%w %q (supported: %s)",
			ErrUnsupportedLanguage, args.Language, strings.Join(Languages(), ", "))}
	}
	timeout := k.opts.CommandTimeout
	if args.Timeout != nil {
		if *args.Timeout <= 0 || *args.Timeout > k.opts.MaxCodeTimeout.Seconds() {
			return res, &flow.ToolError{Kind: flow.ToolErrSchema, Err: fmt.Errorf("timeout %g is not in (0, %g] seconds", *args.Timeout, k.opts.MaxCodeTimeout.Seconds())}
		}
		timeout = time.Duration(*args.Timeout * float64(time.Second))
	}
	res, out, err := k.command(ctx, sb, res, sandbox.ExecRequest{Command: lang.script(args.Code), Timeout: timeout})
	if err == nil && out.ExitCode == 127 && strings.TrimSpace(string(out.Stderr)) == missingMark+lang.program {
		return res, &flow.ToolError{Kind: flow.ToolErrFailed, Err: &LanguageError{Language: lang.name, Program: lang.program, Sandbox: sb.ID()}}
	}
	return res, err
}
