package events

import (
	"bytes"
	"encoding/hex"
)

// How an event is kept in its row, as opposed to what it is (Event). The
// hash chain covers the row as stored, so every byte a reader sees is
// covered: what the row leaves out is rebuilt from columns the chain also
// covers.
//
//   - A chunk.appended payload leaves out its leading "session" field, the
//     row's stream: a chat thread stores its text and little else.
//   - SQLite keeps the hash as its 32 bytes, not 64 hex digits.

// sessionKey is how a chunk.appended payload starts, before the stream.
var sessionKey = []byte(`{"session":`)

// compactPayload returns the payload as its row stores it.
func compactPayload(stream, typ string, payload []byte) []byte {
	if typ != TypeChunkAppended || !bytes.HasPrefix(payload, sessionKey) {
		return payload
	}
	prefix := streamPrefix(stream)
	if !bytes.HasPrefix(payload, prefix) {
		return payload
	}
	out := make([]byte, 0, len(payload)-len(prefix)+1)
	return append(append(out, '{'), payload[len(prefix):]...)
}

// ExpandStored returns the payload of a row as stored in the events table
// (after fetching it from blobs, see StoredInBlob): Store.Read does this
// for every row; a reader of raw rows calls it.
func ExpandStored(stream, typ string, stored []byte) []byte {
	if typ != TypeChunkAppended || len(stored) < 2 || stored[0] != '{' || bytes.HasPrefix(stored, sessionKey) || bytes.HasPrefix(stored, blobPrefix) || string(stored) == redactedMarker {
		return stored
	}
	prefix := streamPrefix(stream)
	out := make([]byte, 0, len(prefix)+len(stored)-1)
	return append(append(out, prefix...), stored[1:]...)
}

// streamPrefix is `{"session":"<stream>",` as Canonical writes it.
func streamPrefix(stream string) []byte {
	quoted, err := Canonical(stream)
	if err != nil {
		// A string always encodes.
		panic(err)
	}
	out := make([]byte, 0, len(sessionKey)+len(quoted)+1)
	return append(append(append(out, sessionKey...), quoted...), ',')
}

// storedHash is the hash column's value: raw bytes for SQLite, hex text
// for PostgreSQL (whose column is text).
func storedHash(pg bool, hash string) any {
	if pg {
		return hash
	}
	if b, err := hex.DecodeString(hash); err == nil && len(b) == 32 {
		return b
	}
	return hash
}

// hashText is the hex form of a hash column read back: rows written before
// SQLite kept raw bytes hold the hex text already.
func hashText(column string) string {
	if len(column) == 32 {
		return hex.EncodeToString([]byte(column))
	}
	return column
}
