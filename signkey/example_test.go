package signkey_test

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/mod/sumdb/note"

	"github.com/gorath/rath/signkey"
)

func Example() {
	dir, _ := os.MkdirTemp("", "keys")
	defer os.RemoveAll(dir)
	files, err := signkey.Generate(filepath.Join(dir, "k"), "example.org/log")
	if err != nil {
		panic(err)
	}
	key, err := signkey.Load(files.Signer)
	if err != nil {
		panic(err)
	}
	signed, _ := note.Sign(&note.Note{Text: "example.org/log\n1\nAAAA\n"}, key.NoteSigner())
	v, _, _ := signkey.ParseVerifierKey(key.VerifierKey())
	n, err := note.Open(signed, note.VerifierList(v))
	fmt.Println(err == nil, n.Sigs[0].Name)
	// Output: true example.org/log
}
