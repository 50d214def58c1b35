package eventlog

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
)

// Hash input formats. Format 1 hashed a NULL run_id like an empty one, so
// an edit between the two went unnoticed; format 2 marks NULL with a
// length of -1, which no string has. Stores keep the first seq hashed with
// format 2 in store_meta (metaChainV2From): older events keep verifying
// under format 1, and Verify refuses an empty run_id there instead, since
// the writer has only ever stored NULL for "no run".
const (
	hashFormat1 = 1
	hashFormat2 = 2
)

// chainHasher computes the hash chain. Each event's hash covers the
// previous hash and every stored column except seq's rowid alias and the
// hash itself, with each field length-prefixed so no two different rows
// hash the same input.
type chainHasher struct {
	h     hash.Hash
	keyed bool
	buf   [8]byte
	sum   [sha256.Size]byte
}

func newChainHasher(key []byte) *chainHasher {
	if len(key) > 0 {
		return &chainHasher{h: hmac.New(sha256.New, key), keyed: true}
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
// hasRun false means a NULL run_id; format is hashFormat1 or hashFormat2.
func (c *chainHasher) eventHash(format int, prev string, seq int64, stream string, version int64, typ string, typeVersion int, runID string, hasRun bool, payload []byte, atNanos int64) string {
	c.h.Reset()
	c.str(prev)
	c.int(seq)
	c.str(stream)
	c.int(version)
	c.str(typ)
	c.int(int64(typeVersion))
	if format >= hashFormat2 && !hasRun {
		c.int(-1)
	} else {
		c.str(runID)
	}
	c.bytes(payload)
	c.int(atNanos)
	return hex.EncodeToString(c.h.Sum(c.sum[:0]))
}

// headMAC returns the hex HMAC-SHA256 of a Merkle tree head's text
// under the chain's key, "" without a key. The tree is unkeyed, so anyone
// can check a proof; the MAC is what only a key holder can compute, so a
// log rewritten (or truncated) with its tree and head recomputed fails
// verification without the key.
func (c *chainHasher) headMAC(head string) string {
	if !c.keyed {
		return ""
	}
	c.h.Reset()
	c.h.Write([]byte("rath merkle head v1\n"))
	c.h.Write([]byte(head))
	return hex.EncodeToString(c.h.Sum(c.sum[:0]))
}

// keyFingerprint identifies the chain's key without revealing it: the
// HMAC of a fixed label under the key, or "sha256" for an unkeyed chain.
// Only a holder of the key can compute it, and it is not the key.
func keyFingerprint(key []byte) string {
	if len(key) == 0 {
		return fingerprintUnkeyed
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("rath hash chain key fingerprint v1"))
	return fingerprintKeyedPrefix + hex.EncodeToString(m.Sum(nil))
}

const (
	fingerprintUnkeyed     = "sha256"
	fingerprintKeyedPrefix = "hmac-sha256:"
)

// BlobHash returns the content address of b: its hex SHA-256.
func BlobHash(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
