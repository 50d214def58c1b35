package cli

import (
	"fmt"
	"io"
	"strings"
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
