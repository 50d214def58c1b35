package signkey_test

import (
	"crypto/rand"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/gorath/rath/signkey"
)

// Forms holds the key's base64 payload whole, even when the payload
// holds a '+' (the separator of the note text's fields).
func TestKey_FormsHoldThePayloadWhole(t *testing.T) {
	for i := 0; i < 64; i++ {
		skey, _, err := note.GenerateKey(rand.Reader, "log")
		if err != nil {
			t.Fatal(err)
		}
		k, err := signkey.Parse(skey)
		if err != nil {
			t.Fatal(err)
		}
		payload := strings.SplitN(skey, "+", 5)[4]
		if forms := k.Forms(); !slices.Contains(forms, skey) || !slices.Contains(forms, payload) {
			t.Fatalf("key %d: forms lack the text or the payload", i)
		}
	}
}
