package signkey

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// File names that Generate writes into its directory.
const (
	SignerFile   = "signer.key"    // note private key text, mode 0600
	VerifierFile = "verifier.vkey" // note verifier key text
	PublicPEM    = "public.pem"    // the public key, PKIX PEM
)

// algEd25519 is the note format's algorithm byte for Ed25519 keys.
const algEd25519 = 1

// ErrBadKey reports a key file or key text that is not an Ed25519 note key.
var ErrBadKey = errors.New("signkey: not an Ed25519 note key")

// Key is a loaded signer key.
type Key struct {
	name    string
	private ed25519.PrivateKey
	signer  note.Signer
	vkey    string
	text    string // the note private key text
}

// Files names the files Generate wrote.
type Files struct {
	Signer, Verifier, PEM string
}

// Generate creates a new key named name (the name a note signature
// carries, e.g. the store's origin) and writes its three files into dir,
// which it creates. It refuses to overwrite an existing signer file.
func Generate(dir, name string) (Files, error) {
	if name == "" || strings.ContainsAny(name, "+ \n") {
		return Files{}, fmt.Errorf("signkey: key name %q must be non-empty without '+', spaces or newlines", name)
	}
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		return Files{}, fmt.Errorf("signkey: generate: %w", err)
	}
	k, err := Parse(skey)
	if err != nil {
		return Files{}, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Files{}, fmt.Errorf("signkey: %w", err)
	}
	f := Files{Signer: filepath.Join(dir, SignerFile), Verifier: filepath.Join(dir, VerifierFile), PEM: filepath.Join(dir, PublicPEM)}
	out, err := os.OpenFile(f.Signer, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return Files{}, fmt.Errorf("signkey: %w", err)
	}
	if _, err := out.WriteString(skey + "\n"); err != nil {
		out.Close()
		return Files{}, fmt.Errorf("signkey: %w", err)
	}
	if err := out.Close(); err != nil {
		return Files{}, fmt.Errorf("signkey: %w", err)
	}
	if err := os.WriteFile(f.Verifier, []byte(vkey+"\n"), 0o644); err != nil {
		return Files{}, fmt.Errorf("signkey: %w", err)
	}
	if err := os.WriteFile(f.PEM, k.PublicPEM(), 0o644); err != nil {
		return Files{}, fmt.Errorf("signkey: %w", err)
	}
	return f, nil
}

// Load reads a signer key file.
func Load(path string) (*Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("signkey: %w", err)
	}
	k, err := Parse(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return k, nil
}

// Parse reads note private key text. The text is never part of an error.
func Parse(skey string) (*Key, error) {
	signer, err := note.NewSigner(skey)
	if err != nil {
		return nil, ErrBadKey
	}
	// PRIVATE+KEY+name+hash+base64(alg || seed); the base64 may hold '+'.
	parts := strings.SplitN(strings.TrimPrefix(skey, "PRIVATE+KEY+"), "+", 3)
	if len(parts) != 3 {
		return nil, ErrBadKey
	}
	raw, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(raw) != 1+ed25519.SeedSize || raw[0] != algEd25519 {
		return nil, ErrBadKey
	}
	priv := ed25519.NewKeyFromSeed(raw[1:])
	vkey, err := note.NewEd25519VerifierKey(signer.Name(), priv.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, ErrBadKey
	}
	return &Key{name: signer.Name(), private: priv, signer: signer, vkey: vkey, text: skey}, nil
}

// Forms returns the private key as a program that reads its file might
// print it, for a redactor to remove (package secret): the note text, and
// the file's text in base64 (on one line, and wrapped as base64(1) wraps)
// and hex (on one line, and wrapped as xxd -p wraps); the base64 payload
// of the note text; the seed and the 64-byte private key in standard, raw
// and URL-safe base64 and in hex. Each is secret.
func (k *Key) Forms() []string {
	out := []string{k.text}
	for _, file := range []string{k.text + "\n", k.text} {
		b64 := base64.StdEncoding.EncodeToString([]byte(file))
		hx := hex.EncodeToString([]byte(file))
		out = append(out, b64, wrap(b64, 76), hx, wrap(hx, 60))
	}
	// PRIVATE+KEY+name+hash+payload: the payload's base64 may hold '+'.
	parts := strings.SplitN(k.text, "+", 5)
	out = append(out, parts[len(parts)-1])
	for _, raw := range [][]byte{k.private.Seed(), k.private} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			out = append(out, enc.EncodeToString(raw))
		}
		out = append(out, hex.EncodeToString(raw), strings.ToUpper(hex.EncodeToString(raw)))
	}
	return out
}

// wrap breaks s into lines of n characters.
func wrap(s string, n int) string {
	var b strings.Builder
	for len(s) > n {
		b.WriteString(s[:n] + "\n")
		s = s[n:]
	}
	b.WriteString(s)
	return b.String()
}

// Name is the key's name, as note signatures carry it.
func (k *Key) Name() string { return k.name }

// NoteSigner signs notes (checkpoints) with the key.
func (k *Key) NoteSigner() note.Signer { return k.signer }

// VerifierKey is the note verifier key text ("name+hash+base64").
func (k *Key) VerifierKey() string { return k.vkey }

// Public is the Ed25519 public key.
func (k *Key) Public() ed25519.PublicKey { return k.private.Public().(ed25519.PublicKey) }

// KeyID names the public key in DSSE envelopes: the hex SHA-256 of its
// PKIX DER encoding, which any tool can recompute from the PEM.
func (k *Key) KeyID() string { return PublicKeyID(k.Public()) }

// Sign signs msg with plain Ed25519 (as DSSE does over its PAE).
func (k *Key) Sign(msg []byte) []byte { return ed25519.Sign(k.private, msg) }

// PublicPEM is the public key as a PKIX "PUBLIC KEY" PEM block.
func (k *Key) PublicPEM() []byte { return EncodePublicPEM(k.Public()) }

// EncodePublicPEM encodes an Ed25519 public key as a PKIX PEM block.
func EncodePublicPEM(pub ed25519.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		// Ed25519 keys always marshal; a failure is a programming error.
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// PublicKeyID is the hex SHA-256 of pub's PKIX DER encoding.
func PublicKeyID(pub ed25519.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// ParseVerifierKey reads note verifier key text and returns its note
// verifier and Ed25519 public key.
func ParseVerifierKey(vkey string) (note.Verifier, ed25519.PublicKey, error) {
	vkey = strings.TrimSpace(vkey)
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrBadKey, err)
	}
	parts := strings.SplitN(vkey, "+", 3) // name+hash+base64(alg || key)
	if len(parts) != 3 {
		return nil, nil, ErrBadKey
	}
	raw, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(raw) != 1+ed25519.PublicKeySize || raw[0] != algEd25519 {
		return nil, nil, ErrBadKey
	}
	return v, ed25519.PublicKey(raw[1:]), nil
}
