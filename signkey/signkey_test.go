package signkey

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

func TestGenerateLoadSignVerify(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	f, err := Generate(dir, "rath.example/store")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(f.Signer); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("signer file mode: %v %v", st.Mode(), err)
	}
	k, err := Load(f.Signer)
	if err != nil {
		t.Fatal(err)
	}
	vb, _ := os.ReadFile(f.Verifier)
	if strings.TrimSpace(string(vb)) != k.VerifierKey() {
		t.Fatalf("verifier file %q, key says %q", vb, k.VerifierKey())
	}
	// A note signed with the key verifies with the verifier file.
	msg, err := note.Sign(&note.Note{Text: "hello\n"}, k.NoteSigner())
	if err != nil {
		t.Fatal(err)
	}
	v, pub, err := ParseVerifierKey(string(vb))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(msg, note.VerifierList(v)); err != nil {
		t.Fatal(err)
	}
	// The raw signature verifies with the PEM key, as openssl would check it.
	pb, _ := os.ReadFile(f.PEM)
	blk, _ := pem.Decode(pb)
	pk, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !ed25519.Verify(pk.(ed25519.PublicKey), []byte("m"), k.Sign([]byte("m"))) || !pub.Equal(pk) {
		t.Fatal("PEM key does not verify the key's signature")
	}
	if len(k.KeyID()) != 64 {
		t.Fatalf("key id %q", k.KeyID())
	}
	if _, err := Generate(dir, "rath.example/store"); err == nil {
		t.Fatal("Generate overwrote an existing signer file")
	}
}

func TestBadKeys(t *testing.T) {
	for _, in := range []string{"", "PRIVATE+KEY+x", "x+0000+AAAA", "PRIVATE+KEY+n+00000000+!!"} {
		if _, err := Parse(in); !errors.Is(err, ErrBadKey) {
			t.Errorf("Parse(%q) = %v, want ErrBadKey", in, err)
		}
	}
	if _, _, err := ParseVerifierKey("nope"); !errors.Is(err, ErrBadKey) {
		t.Errorf("ParseVerifierKey: %v", err)
	}
	if _, err := Generate(t.TempDir(), "bad name"); err == nil {
		t.Error("a name with a space was accepted")
	}
}
