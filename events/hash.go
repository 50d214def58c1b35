package events

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
)

// chainHasher computes the hash chain. Each event's hash covers the
// previous hash and every stored column except seq's rowid alias and the
// hash itself, with each field length-prefixed so no two different rows
// hash the same input.
type chainHasher struct {
	h   hash.Hash
	buf [8]byte
	sum [sha256.Size]byte
}

func newChainHasher(key []byte) *chainHasher {
	if len(key) > 0 {
		return &chainHasher{h: hmac.New(sha256.New, key)}
	}
	return &chainHasher{h: sha256.New()}
}

func (c *chainHasher) int(v int64) {
	binary.BigEndian.PutUint64(c.buf[:], uint64(v))
	c.h.Write(c.buf[:])
}

func (c *chainHasher) str(s string) {
	c.int(int64(len(s)))
	c.h.Write([]byte(s))
}

func (c *chainHasher) bytes(b []byte) {
	c.int(int64(len(b)))
	c.h.Write(b)
}

// eventHash returns the hex hash of a row given the previous row's hash.
func (c *chainHasher) eventHash(prev string, seq int64, stream string, version int64, typ string, typeVersion int, runID string, payload []byte, atNanos int64) string {
	c.h.Reset()
	c.str(prev)
	c.int(seq)
	c.str(stream)
	c.int(version)
	c.str(typ)
	c.int(int64(typeVersion))
	c.str(runID)
	c.bytes(payload)
	c.int(atNanos)
	return hex.EncodeToString(c.h.Sum(c.sum[:0]))
}

// BlobHash returns the content address of b: its hex SHA-256.
func BlobHash(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
