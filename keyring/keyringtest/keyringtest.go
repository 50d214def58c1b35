package keyringtest

import (
	"path/filepath"
	"testing"

	"github.com/gorath/rath/keyring"
)

// KEK writes a new key-encryption key to a file in a directory of the
// test's and loads it, failing the test if either step fails.
func KEK(t testing.TB) keyring.KEK {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kek")
	if err := keyring.GenerateKEKFile(path); err != nil {
		t.Fatal(err)
	}
	kek, err := keyring.LoadKEKFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return kek
}
