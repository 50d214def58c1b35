package events

import "bytes"

// How a payload is kept in its row, as opposed to what it is. The hash
// chain covers the row as stored, so what the row leaves out is rebuilt
// from columns the chain also covers: a chunk.appended payload leaves out
// its leading "session" field, the row's stream.

// blobPrefix starts a payload kept in blobs, whose row holds a reference.
var blobPrefix = []byte(`{"$blob":"`)

// sessionKey is how a chunk.appended payload starts, before the stream.
var sessionKey = []byte(`{"session":`)

// CompactPayload returns the payload as its row stores it.
func CompactPayload(stream, typ string, payload []byte) []byte {
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
	if typ != TypeChunkAppended || len(stored) < 2 || stored[0] != '{' || bytes.HasPrefix(stored, sessionKey) || bytes.HasPrefix(stored, blobPrefix) ||
		string(stored) == RedactedMarker || bytes.HasPrefix(stored, []byte(SealedPrefix)) {
		return stored
	}
	prefix := streamPrefix(stream)
	out := make([]byte, 0, len(prefix)+len(stored)-1)
	return append(append(out, prefix...), stored[1:]...)
}

// streamPrefix is `{"session":"<stream>",` as Canonical writes it.
func streamPrefix(stream string) []byte {
	if b := []byte(stream); plainASCII(b) && bytes.IndexByte(b, '"') < 0 && bytes.IndexByte(b, '\\') < 0 {
		// Session ids are: the encoder cost more than the rest of a
		// rebuild's reading of a chunk.
		out := make([]byte, 0, len(sessionKey)+len(stream)+3)
		return append(append(append(append(out, sessionKey...), '"'), stream...), '"', ',')
	}
	quoted, err := Canonical(stream)
	if err != nil {
		// A string always encodes.
		panic(err)
	}
	out := make([]byte, 0, len(sessionKey)+len(quoted)+1)
	return append(append(append(out, sessionKey...), quoted...), ',')
}
