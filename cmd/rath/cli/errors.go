package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// usageError is a mistake in how a command was called. It exits with code
// 2 and prints hint as a "Try:" line.
type usageError struct {
	err  error
	hint string
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usage error for cmd, hinting at its example.
func usagef(cmd *cobra.Command, format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...), hint: hint(cmd)}
}

// hint is the first line of the command's example, or its usage line.
func hint(cmd *cobra.Command) string {
	if !cmd.HasParent() {
		return cmd.Name() + " --help" // the root's examples are a tour
	}
	if ex := strings.TrimSpace(cmd.Example); ex != "" {
		line, _, _ := strings.Cut(ex, "\n")
		return strings.TrimSpace(line)
	}
	return cmd.UseLine()
}

// args wraps a cobra argument validator so its errors are usage errors.
func args(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := v(cmd, a); err != nil {
			return &usageError{err: err, hint: hint(cmd)}
		}
		return nil
	}
}
