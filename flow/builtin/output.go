package builtin

import (
	"fmt"
	"strings"

	"github.com/gorath/rath/sandbox"
)

// formatExec is a command's result as the model reads it: the exit code,
// then each non-empty stream, with a mark where the sandbox cut it.
func formatExec(res sandbox.ExecResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "exit code: %d", res.ExitCode)
	writeStream(&b, "stdout", res.Stdout, res.StdoutTruncated, res.StdoutBytes)
	writeStream(&b, "stderr", res.Stderr, res.StderrTruncated, res.StderrBytes)
	if res.StdoutBytes == 0 && res.StderrBytes == 0 {
		b.WriteString("\n(no output)")
	}
	return b.String()
}

func writeStream(b *strings.Builder, name string, data []byte, truncated bool, total int64) {
	if total == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s:\n", name)
	if sandbox.IsBinary(data) {
		fmt.Fprintf(b, "[binary output, %d bytes, not shown]", total)
		return
	}
	b.WriteString(strings.TrimSuffix(text(data), "\n"))
	if truncated {
		fmt.Fprintf(b, "\n[%s truncated: showing the first %d of %d bytes]", name, len(data), total)
	}
}

// text makes bytes safe to send as a JSON string: a cap can cut a
// multi-byte character in two.
func text(data []byte) string {
	return strings.ToValidUTF8(string(data), "\uFFFD")
}

// cut returns at most max bytes of s, not splitting a character.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "")
}
