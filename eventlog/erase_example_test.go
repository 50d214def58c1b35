package eventlog_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// A payload is deleted and its leaf kept: the log still verifies, and
// lists the redaction.
func ExampleStore_Redact() {
	ctx := context.Background()
	store, done := openExampleStore(ctx)
	defer done()
	for _, who := range []string{"alice", "bob"} {
		p := &events.MemoryRemembered{Namespace: "people", ID: who, Text: who + " lives in Lyon"}
		if _, err := store.Append(ctx, events.MemoryStream("people"), eventlog.AnyVersion, p); err != nil {
			fmt.Println(err)
			return
		}
	}
	res, err := store.Redact(ctx, eventlog.RedactRequest{Seqs: []int64{1}, By: "dpo", Reason: "erasure request 12"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ev, _ := store.Get(ctx, 1)
	_, derr := ev.Decode()
	rep, _ := store.Verify(ctx, eventlog.VerifyOptions{})
	fmt.Println("record at seq", res.Record.Seq)
	fmt.Println("redacted:", ev.Redacted, errors.Is(derr, events.ErrRedacted))
	fmt.Println("verifies:", rep.OK())
	fmt.Println(rep.Redactions[0])
	// Output:
	// record at seq 3
	// redacted: true true
	// verifies: true
	// seq 1: redacted at seq 3 by dpo: erasure request 12
}
