package sandbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"unicode/utf8"

	"github.com/gorath/rath/eventlog"
)

// binarySniffLen is how much of a file IsBinary looks at: enough to see a
// NUL in any binary format's header, small enough to be cheap.
const binarySniffLen = 8 << 10

// IsBinary reports whether data looks like binary rather than text: it
// contains a NUL byte, or its first 8 KiB are not valid UTF-8 (a multi-byte
// rune cut at the 8 KiB boundary does not count). Tool layers use it to
// describe a binary file instead of pasting it into a model's context.
func IsBinary(data []byte) bool {
	head := data
	if len(head) > binarySniffLen {
		head = head[:binarySniffLen]
		// Drop a rune cut in two by the window: back up to the start of the
		// last rune and keep it only if it is complete.
		for i := len(head) - 1; i >= 0 && i >= len(head)-utf8.UTFMax; i-- {
			if utf8.RuneStart(head[i]) {
				if !utf8.FullRune(head[i:]) {
					head = head[:i]
				}
				break
			}
		}
	}
	return bytes.IndexByte(head, 0) >= 0 || !utf8.Valid(head)
}

// Hash returns the content hash used in [FileChange]: the hex SHA-256 of
// data, identical to eventlog.BlobHash.
func Hash(data []byte) string { return eventlog.BlobHash(data) }

// HashReader hashes a stream without holding it in memory; the result equals
// Hash of the same bytes.
func HashReader(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
