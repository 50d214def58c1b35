package keyring

import (
	"bytes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
)

// sealedPrefix starts every sealed form: the keys come in a fixed order.
const sealedPrefix = `{"$sealed":1,"s":`

// DataKey is one subject's unwrapped data key. It never leaves the
// process: only its wrapped form is stored.
type DataKey struct {
	Subject  string
	ID       string
	aead     cipher.AEAD
	nonceKey []byte // SealFixed's nonces
	// head is the sealed form up to its nonce, and ad the additional
	// data up to the binding: the same for every seal under the key.
	head, ad []byte
	// scratch holds a seal's nonce, additional data and ciphertext
	// until they are encoded (*[]byte): an append seals every payload,
	// and allocating them doubled what sealing left to collect.
	scratch sync.Pool
}

// newDataKey returns the data key of subject with id, whose AEAD and
// nonce key come from the raw key.
func newDataKey(subject, id string, aead cipher.AEAD, raw []byte) *DataKey {
	// A valid subject and a key id are printable ASCII, for which Go's
	// quoting is JSON's.
	head := strconv.AppendQuote([]byte(sealedPrefix), subject)
	head = append(head, `,"k":`...)
	head = strconv.AppendQuote(head, id)
	head = append(head, `,"n":"`...)
	return &DataKey{Subject: subject, ID: id, aead: aead, nonceKey: nonceKey(raw), head: head, ad: additionalData(subject, nil)}
}

// sealedForm is the JSON of a sealed payload.
type sealedForm struct {
	Version    int    `json:"$sealed"`
	Subject    string `json:"s"`
	KeyID      string `json:"k"`
	Nonce      []byte `json:"n"`
	Ciphertext []byte `json:"c"`
}

// IsSealed reports whether payload is in the sealed form.
func IsSealed(payload []byte) bool { return bytes.HasPrefix(payload, []byte(sealedPrefix)) }

// SealedSubject returns the subject a sealed payload belongs to, with no
// key; false for a payload that is not sealed.
func SealedSubject(payload []byte) (string, bool) {
	f, err := parseSealed(payload)
	if err != nil {
		return "", false
	}
	return f.Subject, true
}

func parseSealed(payload []byte) (*sealedForm, error) {
	if !IsSealed(payload) {
		return nil, &SealedError{Reason: "not sealed"}
	}
	var f sealedForm
	if err := json.Unmarshal(payload, &f); err != nil {
		return nil, &SealedError{Reason: "malformed: " + err.Error()}
	}
	if f.Version != 1 || f.KeyID == "" {
		return nil, &SealedError{Subject: f.Subject, Reason: fmt.Sprintf("unknown version %d", f.Version)}
	}
	return &f, nil
}

// additionalData binds a ciphertext to its subject and the caller's
// binding (the event log's stream and type), with lengths so no two
// pairs run together into the same bytes.
func additionalData(subject string, binding []byte) []byte {
	ad := make([]byte, 0, 32+len(subject)+len(binding))
	ad = append(ad, "rath keyring: sealed v1\x00"...)
	ad = strconv.AppendInt(ad, int64(len(subject)), 10)
	ad = append(ad, ':')
	ad = append(ad, subject...)
	return append(ad, binding...)
}

// Seal encrypts plaintext under dk, bound to binding, and returns the
// sealed form.
func Seal(dk *DataKey, binding, plaintext []byte) ([]byte, error) {
	buf := dk.getScratch(len(binding) + len(plaintext))
	defer dk.scratch.Put(buf)
	nonce := (*buf)[:nonceSize]
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("keyring: seal: %w", err)
	}
	return seal(dk, nonce, binding, plaintext, (*buf)[nonceSize:]), nil
}

// nonceSize is GCM's standard nonce length, the AEAD's (newDataKey).
const nonceSize = 12

// getScratch returns a buffer from dk's pool with room for a nonce,
// the additional data and the ciphertext of n bytes of binding and
// plaintext.
func (dk *DataKey) getScratch(n int) *[]byte {
	need := nonceSize + len(dk.ad) + n + dk.aead.Overhead()
	if p, ok := dk.scratch.Get().(*[]byte); ok && cap(*p) >= need {
		*p = (*p)[:need]
		return p
	}
	b := make([]byte, need)
	return &b
}

// SealFixed is Seal with a nonce derived from the key, the binding and
// the plaintext (an HMAC under a key that goes with dk), so equal inputs
// seal to equal bytes: a read model rebuilt from the log equals, row for
// row, the one built as events came. Distinct plaintexts get distinct
// nonces, so GCM's nonce is never reused with different content; what it
// reveals is only that two sealed values under one key and binding are
// equal. Open opens it as it opens Seal's.
func SealFixed(dk *DataKey, binding, plaintext []byte) []byte {
	m := hmac.New(sha256.New, dk.nonceKey)
	m.Write(strconv.AppendInt(nil, int64(len(binding)), 10))
	m.Write([]byte{':'})
	m.Write(binding)
	m.Write(plaintext)
	buf := dk.getScratch(len(binding) + len(plaintext))
	defer dk.scratch.Put(buf)
	return seal(dk, m.Sum(nil)[:nonceSize], binding, plaintext, (*buf)[nonceSize:])
}

// seal encrypts plaintext with nonce and returns the sealed form, its
// one allocation; scratch, which holds the additional data and the
// ciphertext until they are encoded, has room for both.
func seal(dk *DataKey, nonce, binding, plaintext, scratch []byte) []byte {
	enc := base64.StdEncoding
	ctLen := len(plaintext) + dk.aead.Overhead()
	n := len(dk.head) + enc.EncodedLen(len(nonce)) + len(`","c":"`) + enc.EncodedLen(ctLen) + len(`"}`)
	ad := append(append(scratch[:0], dk.ad...), binding...)
	ct := dk.aead.Seal(scratch[len(ad):len(ad)], nonce, plaintext, ad)
	out := make([]byte, 0, n)
	out = append(out, dk.head...)
	out = enc.AppendEncode(out, nonce)
	out = append(out, `","c":"`...)
	out = enc.AppendEncode(out, ct)
	return append(out, `"}`...)
}

// open decrypts a parsed sealed form under dk.
func open(dk *DataKey, f *sealedForm, binding []byte) ([]byte, error) {
	if len(f.Nonce) != dk.aead.NonceSize() {
		return nil, &SealedError{Subject: f.Subject, Reason: "bad nonce"}
	}
	pt, err := dk.aead.Open(nil, f.Nonce, f.Ciphertext, additionalData(f.Subject, binding))
	if err != nil {
		return nil, &SealedError{Subject: f.Subject, Reason: "authentication failed (altered, or moved from another event)"}
	}
	return pt, nil
}
