package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/gorath/rath/internal/textsafe"
)

// maxStdinText bounds chunk text read from stdin.
const maxStdinText = 64 << 20

// textArg joins the text arguments with spaces; a single "-" reads the
// text from stdin instead.
func textArg(stdin io.Reader, argv []string) (string, error) {
	if len(argv) == 1 && argv[0] == "-" {
		b, err := io.ReadAll(io.LimitReader(stdin, maxStdinText+1))
		if err != nil {
			return "", fmt.Errorf("read stdin: %w", err)
		}
		if len(b) > maxStdinText {
			return "", fmt.Errorf("stdin holds more than %d bytes", maxStdinText)
		}
		return string(b), nil
	}
	return strings.Join(argv, " "), nil
}

// termSafe escapes what a terminal would act on instead of showing: C0
// control characters other than newline and tab (ESC starts clipboard
// writes, screen clears, title changes), DEL, the C1 controls U+0080 to
// U+009F (U+009B is a one-character CSI), bytes that are not UTF-8, and
// the bidi controls that would reorder the line (textsafe.Terminal).
// Model text and tool output are hostile; they pass through it before
// reaching a terminal.
func termSafe(s string) string { return textsafe.Terminal(s) }

// termWriter writes through termSafe. A write may end inside a UTF-8
// sequence (a streamed delta does): those bytes wait for the next write,
// so a split character is not taken for a bad byte. Flush writes what
// is left.
type termWriter struct {
	w    io.Writer
	tail []byte
}

func (t *termWriter) Write(p []byte) (int, error) {
	b := append(t.tail, p...)
	cut := len(b)
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				cut = i
			}
			break
		}
	}
	t.tail = append([]byte(nil), b[cut:]...)
	if _, err := io.WriteString(t.w, termSafe(string(b[:cut]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a held-back incomplete sequence, escaped.
func (t *termWriter) Flush() error {
	if len(t.tail) == 0 {
		return nil
	}
	_, err := io.WriteString(t.w, termSafe(string(t.tail)))
	t.tail = nil
	return err
}

// isTerminal reports whether stream (an output, where progress can be
// redrawn in place, or an input a person types at) is a terminal.
func isTerminal(stream any) bool {
	f, ok := stream.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// plural is n and the noun, with an s unless n is 1: "1 run", "3 runs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
