package keyring

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// KEK wraps and unwraps data keys. A file KEK ([LoadKEKFile]) is the one
// built in; a cloud KMS can implement it. Implementations must be safe
// for concurrent use.
type KEK interface {
	// ID is a stable id of the key, recorded beside every key it wraps,
	// so a store opened with another KEK says so instead of failing to
	// unwrap. It must not reveal the key.
	ID() string
	// Wrap encrypts a data key.
	Wrap(dataKey []byte) ([]byte, error)
	// Unwrap decrypts what Wrap returned. A wrong KEK is a *KEKError
	// (ErrKEK), never garbage.
	Unwrap(wrapped []byte) ([]byte, error)
}

// kekFileHeader starts a key-encryption key file; the key follows in
// standard base64.
const kekFileHeader = "rath-kek-v1 "

// kekWrapAD is the additional data of every wrap, so a data key wrapped
// by a file KEK cannot pass for anything else encrypted under the key.
var kekWrapAD = []byte("rath keyring: wrapped data key v1")

// fileKEK is a 32-byte AES-256-GCM key read from a file.
type fileKEK struct {
	id   string
	aead cipher.AEAD
}

var _ KEK = (*fileKEK)(nil)

// GenerateKEKFile writes a new random key-encryption key to path, mode
// 0600. It refuses to overwrite a file that exists: losing a KEK loses
// every key it wrapped.
func GenerateKEKFile(path string) error {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("keyring: generate key-encryption key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return &KEKError{Path: path, Reason: "the file exists", Hint: "a key-encryption key is never overwritten; choose another path", Err: err}
	}
	if err != nil {
		return &KEKError{Path: path, Reason: "cannot create", Err: err}
	}
	_, err = f.WriteString(kekFileHeader + base64.StdEncoding.EncodeToString(key) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return &KEKError{Path: path, Reason: "cannot write", Err: err}
	}
	return nil
}

// LoadKEKFile reads a key-encryption key GenerateKEKFile wrote. A file
// that is missing, unreadable or malformed is a *KEKError (ErrKEK).
func LoadKEKFile(path string) (KEK, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &KEKError{Path: path, Reason: "cannot read", Hint: "rath keys kek --out FILE writes one", Err: err}
	}
	line := bytes.TrimSpace(b)
	if !bytes.HasPrefix(line, []byte(kekFileHeader)) {
		return nil, &KEKError{Path: path, Reason: "not a key-encryption key file (rath keys kek writes one)"}
	}
	key, err := base64.StdEncoding.DecodeString(string(line[len(kekFileHeader):]))
	if err != nil || len(key) != 32 {
		return nil, &KEKError{Path: path, Reason: "malformed key: want 32 bytes in base64"}
	}
	return newFileKEK(key)
}

func newFileKEK(key []byte) (*fileKEK, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, &KEKError{Reason: "bad key", Err: err}
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, &KEKError{Reason: "bad key", Err: err}
	}
	// The id is a hash of the key under a label of its own, so it names
	// the key without being a hash an attacker could test keys against
	// any faster than the key's own strength allows.
	sum := sha256.Sum256(append([]byte("rath keyring: kek id\x00"), key...))
	return &fileKEK{id: hex.EncodeToString(sum[:])[:16], aead: aead}, nil
}

func (k *fileKEK) ID() string { return k.id }

func (k *fileKEK) Wrap(dataKey []byte) ([]byte, error) {
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(dataKey)+k.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("keyring: wrap: %w", err)
	}
	return k.aead.Seal(nonce, nonce, dataKey, kekWrapAD), nil
}

func (k *fileKEK) Unwrap(wrapped []byte) ([]byte, error) {
	n := k.aead.NonceSize()
	if len(wrapped) < n+k.aead.Overhead() {
		return nil, &KEKError{Reason: "a wrapped data key is truncated"}
	}
	key, err := k.aead.Open(nil, wrapped[:n], wrapped[n:], kekWrapAD)
	if err != nil {
		return nil, &KEKError{Reason: "does not unwrap the data key", Hint: "is this the key-encryption key the store was written with?"}
	}
	return key, nil
}
