package dossier

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
)

// blobCache reads blobs once; it is the flow.BlobGetter for LoadRequest,
// whose message segments are shared by successive calls.
type blobCache struct {
	store *eventlog.Store
	m     map[string][]byte
}

func (c *blobCache) GetBlob(ctx context.Context, hash string) ([]byte, error) {
	if b, ok := c.m[hash]; ok {
		return b, nil
	}
	b, err := c.store.GetBlob(ctx, hash)
	if err != nil {
		return nil, err
	}
	c.m[hash] = b
	return b, nil
}

var _ flow.BlobGetter = (*blobCache)(nil)

// loadBlobs reads every blob the run's events reference, in one batched
// query, and adds to each provider event's references the message segment
// its request added, so the JSONL output carries every message once.
func (b *builder) loadBlobs(ctx context.Context) error {
	var refs []string
	for _, ev := range b.d.Events {
		refs = append(refs, ev.refs...)
	}
	if err := b.fetch(ctx, refs); err != nil {
		return err
	}
	var segs []string
	for i := range b.d.Events {
		ev := &b.d.Events[i]
		var reqRef string
		switch e := b.payloads[i].(type) {
		case *events.ProviderCalled:
			reqRef = e.RequestRef
		case *events.ProviderFailed:
			reqRef = e.RequestRef
		}
		raw, ok := b.blobs.m[reqRef]
		if !ok {
			continue
		}
		var rec struct {
			MessagesRef string `json:"messages_ref"`
		}
		if json.Unmarshal(raw, &rec) == nil && rec.MessagesRef != "" {
			ev.refs = append(ev.refs, rec.MessagesRef)
			segs = append(segs, rec.MessagesRef)
		}
	}
	return b.fetch(ctx, segs)
}

// fetch loads the blobs not loaded yet, warning once for each missing one.
func (b *builder) fetch(ctx context.Context, refs []string) error {
	var want []string
	seen := map[string]bool{}
	for _, r := range refs {
		if _, ok := b.blobs.m[r]; !ok && !seen[r] {
			seen[r] = true
			want = append(want, r)
		}
	}
	got, err := b.rt.Store().GetBlobs(ctx, want)
	if err != nil {
		return fmt.Errorf("dossier: %w", err)
	}
	for _, r := range want {
		if blob, ok := got[r]; ok {
			b.blobs.m[r] = blob
		} else {
			b.warn("blob %s is missing from the store", r)
		}
	}
	return nil
}

func (b *builder) finishTools() {
	for _, t := range b.d.Tools {
		if t.OutputRef != "" {
			t.Output = b.blobs.m[t.OutputRef]
		}
		for i := range t.Attachments {
			if a := &t.Attachments[i]; a.Ref != "" {
				a.Data = b.blobs.m[a.Ref]
			}
		}
		for i := range t.Files {
			f := &t.Files[i]
			before, okB := b.blobs.m[f.Before]
			after, okA := b.blobs.m[f.After]
			switch {
			case f.Before != "" && !okB, f.After != "" && !okA:
				f.Note = "content not recorded (only its hash): no diff"
			case isBinary(before) || isBinary(after):
				f.Note = fmt.Sprintf("binary content (%d → %d bytes): no diff", len(before), len(after))
			default:
				f.Lines, f.Added, f.Removed = unified(string(before), string(after), diffContext)
			}
		}
	}
}
