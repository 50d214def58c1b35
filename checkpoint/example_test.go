package checkpoint_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/gorath/rath"
	"github.com/gorath/rath/checkpoint"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/signkey"
)

// A store whose writer signs checkpoints, a witness that cosigns them,
// and what verification says.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "checkpoint-example")
	defer os.RemoveAll(dir)
	logKey, _ := newExampleKey(filepath.Join(dir, "log"), "example-log")
	witnessKey, _ := newExampleKey(filepath.Join(dir, "witness"), "example-witness")

	path := filepath.Join(dir, rath.DBFile)
	if err := rath.Migrate(ctx, path); err != nil {
		panic(err)
	}
	signer := checkpoint.NewSigner(logKey, checkpoint.SignerOptions{Every: 1000, Interval: time.Hour})
	store, err := eventlog.Open(ctx, eventlog.Options{Path: path, AfterCommit: signer.Committed})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	if err := signer.Start(ctx, store); err != nil {
		panic(err)
	}
	for i := range 2 {
		store.Append(ctx, "s", eventlog.AnyVersion, &events.SessionPlaced{Session: "s", Backend: "local", Spec: fmt.Sprint(i)})
	}
	if err := signer.Close(); err != nil { // signs the last head
		panic(err)
	}

	w := &checkpoint.Witness{Key: witnessKey, LogKey: logKey.VerifierKey(), StatePath: filepath.Join(dir, "witness.state")}
	res, err := w.Step(ctx, store)
	if err != nil {
		panic(err)
	}
	fmt.Println("cosigned size", res.Head.Size)

	cp, _ := checkpoint.Covering(ctx, store, 1)
	lv, _, _ := signkey.ParseVerifierKey(logKey.VerifierKey())
	wv, _, _ := signkey.ParseVerifierKey(witnessKey.VerifierKey())
	n, err := note.Open(cp.Signed(), note.VerifierList(lv, wv))
	fmt.Println(len(n.Sigs), "signatures", err)

	// The auditor pins the log's key and the witness's, as their holders
	// published them; the summary names each witness key by its key id.
	rep, _ := checkpoint.Verify(ctx, store, checkpoint.VerifyOptions{Keys: []string{logKey.VerifierKey()}, Witnesses: []string{witnessKey.VerifierKey()}})
	fmt.Println(strings.ReplaceAll(rep.Summary(), witnessKey.KeyID(), "KEYID"))
	// Output:
	// cosigned size 2
	// 2 signatures <nil>
	// attested: 1 checkpoint signed by example-log, latest size 2, witnessed by example-witness (key KEYID, up to size 2, pinned); pinned witnesses cosigned up to size 2 of 2
}

func newExampleKey(dir, name string) (*signkey.Key, error) {
	f, err := signkey.Generate(dir, name)
	if err != nil {
		return nil, err
	}
	return signkey.Load(f.Signer)
}
