package eventlog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/secret"
)

// The store redacts payloads and blobs before they are hashed, rewrites
// the blob references of the same write, and records each redaction.
func TestStore_RedactsBeforeWriting(t *testing.T) {
	const key = "sk-redact-me-0123456789"
	red := secret.New(secret.Secret{Name: "OPENAI_API_KEY", Value: key})
	s := MustOpenStore(t, eventlog.Options{Redactor: red})
	ctx := context.Background()
	out := []byte("env: OPENAI_API_KEY=" + key + "\n")
	ret := events.ToolReturned{Session: "s-1", Agent: "a", CallID: "c1", Tool: "sh", OutputRef: eventlog.BlobHash(out), OutputSize: len(out), Error: "failed near " + key}
	stored, err := s.AppendWrites(ctx, eventlog.Write{Stream: "s-1", Expected: eventlog.AnyVersion, Events: []events.Payload{ret}, Blobs: [][]byte{out}})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(stored[0].Payload, []byte(key)) {
		t.Fatalf("stored payload holds the key: %s", stored[0].Payload)
	}
	p, err := stored[0].Decode()
	if err != nil {
		t.Fatal(err)
	}
	got := p.(*events.ToolReturned)
	want := []byte("env: OPENAI_API_KEY=[redacted:OPENAI_API_KEY]\n")
	if got.OutputRef != eventlog.BlobHash(want) || got.OutputSize != len(want) || got.Error != "failed near [redacted:OPENAI_API_KEY]" {
		t.Fatalf("stored tool.returned = %+v", got)
	}
	blob, err := s.GetBlob(ctx, got.OutputRef)
	if err != nil || !bytes.Equal(blob, want) {
		t.Fatalf("blob = %q, %v", blob, err)
	}
	h, err := s.PutBlob(ctx, []byte("again "+key))
	if err != nil || h != eventlog.BlobHash([]byte("again [redacted:OPENAI_API_KEY]")) {
		t.Fatalf("PutBlob = %s, %v", h, err)
	}
	recs, err := s.ReadStream(ctx, events.StreamRedactions, 1)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, ev := range recs {
		p, err := ev.Decode()
		if err != nil {
			t.Fatal(err)
		}
		r := p.(*events.SecretRedacted)
		if len(r.Secrets) != 1 || r.Secrets[0].Name != "OPENAI_API_KEY" || r.Secrets[0].Count != 1 {
			t.Fatalf("record = %+v", r)
		}
		switch {
		case r.Type != "":
			if r.Seq != stored[0].Seq || r.Stream != "s-1" || r.Type != events.TypeToolReturned {
				t.Fatalf("event record = %+v", r)
			}
			kinds = append(kinds, "event")
		default:
			kinds = append(kinds, "blob")
		}
	}
	if strings.Join(kinds, ",") != "blob,event,blob" {
		t.Fatalf("records = %v", kinds)
	}
	if rep, err := s.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !rep.OK() {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

// A blob that references a redacted blob by its old hash (a request's
// message segments chain so) is pointed at the stored one, in later
// appends too, so the chain can still be followed.
func TestStore_RedactionKeepsBlobChains(t *testing.T) {
	const key = "sk-redact-me-0123456789"
	s := MustOpenStore(t, eventlog.Options{Redactor: secret.New(secret.Secret{Name: "K", Value: key})})
	ctx := context.Background()
	seg1 := []byte(`{"add":["my key is ` + key + `"]}`)
	ev := func(ref string) events.Payload {
		return events.ProviderFailed{Session: "s-1", Agent: "a", Provider: "p", Model: "m", ErrorKind: "x", Error: "e", Attempt: 1, RequestRef: ref}
	}
	if _, err := s.AppendWrites(ctx, eventlog.Write{Stream: "s-1", Expected: eventlog.AnyVersion, Events: []events.Payload{ev(eventlog.BlobHash(seg1))}, Blobs: [][]byte{seg1}}); err != nil {
		t.Fatal(err)
	}
	seg2 := []byte(`{"prev":"` + eventlog.BlobHash(seg1) + `","add":["more"]}`)
	stored, err := s.AppendWrites(ctx, eventlog.Write{Stream: "s-1", Expected: eventlog.AnyVersion, Events: []events.Payload{ev(eventlog.BlobHash(seg2))}, Blobs: [][]byte{seg2}})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := stored[0].Decode()
	ref := p.(*events.ProviderFailed).RequestRef
	got2, err := s.GetBlob(ctx, ref)
	if err != nil {
		t.Fatalf("the second segment is not stored under the ref its event names: %v", err)
	}
	var seg struct{ Prev string }
	if err := json.Unmarshal(got2, &seg); err != nil {
		t.Fatal(err)
	}
	got1, err := s.GetBlob(ctx, seg.Prev)
	if err != nil || !strings.Contains(string(got1), "[redacted:K]") {
		t.Fatalf("following prev: %q, %v", got1, err)
	}
}

// The append that carries a write and finds a secret records the
// redaction once it is done, without waiting for itself: the record's own
// append used to wait for the carried write the first one was sending.
func TestStore_ACarryingAppendWithASecret(t *testing.T) {
	const key = "sk-carried-0123456789"
	s := MustOpenStore(t, eventlog.Options{Redactor: secret.New(secret.Secret{Name: "TOKEN", Value: key})})
	ctx := t.Context()
	carried, err := eventlog.NewCarried(eventlog.Write{Stream: "run-1", Expected: eventlog.NoStream, Events: []events.Payload{events.RunStarted{Run: "run-1", Workflow: "w", InputSession: "s-1"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.In(eventlog.Scope{Carry: carried}).Append(ctx, "s-1", eventlog.AnyVersion, events.ToolReturned{Session: "s-1", Agent: "a", CallID: "c1", Tool: "sh", Error: "failed near " + key})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("append: %v", err)
		}
	case <-time.After(30 * time.Second): // an in-memory append takes microseconds
		t.Fatal("the carrying append with a secret never returned")
	}
	if !carried.Written() {
		t.Fatal("the carried write was not written")
	}
	recs, err := s.ReadStream(ctx, events.StreamRedactions, 1)
	if err != nil || len(recs) != 1 {
		t.Fatalf("%d redaction records (%v), want 1", len(recs), err)
	}
}
