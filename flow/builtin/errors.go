package builtin

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrUnknownName is matched by an *UnknownNameError from New.
	ErrUnknownName = errors.New("builtin: unknown tool name")
	// ErrNoPool is returned by New without a sandbox pool.
	ErrNoPool = errors.New("builtin: a sandbox pool is required")
	// ErrUnsupportedLanguage is returned (inside a flow.ToolError) by
	// run_code for a language it does not know.
	ErrUnsupportedLanguage = errors.New("builtin: unsupported language")
	// ErrLanguageUnavailable is matched by a *LanguageError: the language's
	// program is not installed inside the sandbox.
	ErrLanguageUnavailable = errors.New("builtin: language not installed in the sandbox")
)

// UnknownNameError reports a tool name New does not know; Valid lists the
// known names in Names order.
type UnknownNameError struct {
	Name  string
	Valid []string
}

func (e *UnknownNameError) Error() string {
	return fmt.Sprintf("builtin: unknown tool %q (valid: %s)", e.Name, strings.Join(e.Valid, ", "))
}

// Is makes errors.Is(err, ErrUnknownName) true.
func (e *UnknownNameError) Is(target error) bool { return target == ErrUnknownName }

// LanguageError reports that run_code could not find the program a
// language needs inside the sandbox.
type LanguageError struct {
	Language string // as asked, like "python"
	Program  string // what was looked for in PATH, like "python3"
	Sandbox  string // the sandbox id
}

func (e *LanguageError) Error() string {
	return fmt.Sprintf("builtin: run_code: language %s needs %s, which is not installed in sandbox %s (install it there, or use another language)",
		e.Language, e.Program, e.Sandbox)
}

// Is makes errors.Is(err, ErrLanguageUnavailable) true.
func (e *LanguageError) Is(target error) bool { return target == ErrLanguageUnavailable }
