package keyring_test

import (
	"strings"
	"testing"

	"github.com/gorath/rath/keyring"
	"github.com/gorath/rath/keyring/keyringtest"
)

// BenchmarkSeal seals a typical chunk's payload (about 400 bytes) under
// a cached key, as an append does: the key's lookup, the encryption and
// the sealed form's encoding.
func BenchmarkSeal(b *testing.B) {
	db := mustSQLite(b)
	kr := keyring.New(keyringtest.KEK(b), nil)
	ctx := b.Context()
	if _, err := kr.Create(ctx, db, "user:bench"); err != nil {
		b.Fatal(err)
	}
	payload := []byte(`{"session":"s-00001","index":12,"chunk":{"role":"assistant","content":"` + strings.Repeat("what the user said ", 18) + `"}}`)
	binding := []byte("event\x00s-00001\x00chunk.appended")
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		dk, err := kr.Key(ctx, db, "user:bench")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := keyring.Seal(dk, binding, payload); err != nil {
			b.Fatal(err)
		}
	}
}
