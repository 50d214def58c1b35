package eventlog

import "encoding/hex"

// How an event is kept in its row, as opposed to what it is (Event). The
// hash chain covers the row as stored, so every byte a reader sees is
// covered: what the row leaves out is rebuilt from columns the chain also
// covers.
//
//   - A chunk.appended payload leaves out its leading "session" field, the
//     row's stream: a chat thread stores its text and little else.
//   - SQLite keeps the hash as its 32 bytes, not 64 hex digits.

// storedHash is the hash column's value: the dialect's form (raw bytes
// for SQLite, hex text for PostgreSQL, whose column is text), or hex text
// for a store writing the rows of before the compact format.
func (w *writerState) storedHash(hash string) any {
	if w.s.legacyRows {
		return hash
	}
	return w.s.d.storedHash(hash)
}

// hashText is the hex form of a hash column read back: rows written before
// SQLite kept raw bytes hold the hex text already.
func hashText(column string) string {
	if len(column) == 32 {
		return hex.EncodeToString([]byte(column))
	}
	return column
}
