package flow_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
)

// countingBlobs counts reads per blob and can serve a tampered blob.
type countingBlobs struct {
	store  *eventlog.Store
	reads  map[string]int
	forged map[string][]byte
}

func (c *countingBlobs) GetBlob(ctx context.Context, hash string) ([]byte, error) {
	c.reads[hash]++
	if b, ok := c.forged[hash]; ok {
		return b, nil
	}
	return c.store.GetBlob(ctx, hash)
}

func TestRequestLoader_RebuildsEveryRequestReadingEachSegmentOnce(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	const rounds = 6
	var steps []func(model.Request) (model.Response, error)
	for i := range rounds {
		steps = append(steps, callTools(tc(fmt.Sprint("c", i), "add", fmt.Sprintf(`{"a":%d,"b":1}`, i))))
	}
	f := &fakeModel{steps: append(steps, say("done"))}
	agent, err := flow.NewAgent("You add numbers.", provider(t, f, nil), flow.WithTools(adder(t)))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rt.NewUserSession(ctx, "Add a few.")
	out, err := agent.Forward(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := rt.Store().ReadStream(ctx, out.ID(), 1)
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, ev := range evs {
		if p, err := ev.Decode(); err == nil {
			if pc, ok := p.(*events.ProviderCalled); ok {
				refs = append(refs, pc.RequestRef)
			}
		}
	}
	sent := f.requests()
	if len(refs) != rounds+1 || len(sent) != rounds+1 {
		t.Fatalf("%d recorded calls, %d sent, want %d", len(refs), len(sent), rounds+1)
	}

	blobs := &countingBlobs{store: rt.Store(), reads: map[string]int{}}
	loader := flow.NewRequestLoader(blobs)
	for i, ref := range refs {
		got, err := loader.Load(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(sent[i], got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("request %d rebuilt from the log differs from the one sent (-sent +rebuilt):\n%s", i, diff)
		}
		alone, err := flow.LoadRequest(ctx, rt.Store(), ref)
		if err != nil || !cmp.Equal(alone, got, cmpopts.EquateEmpty()) {
			t.Fatalf("LoadRequest and RequestLoader disagree on request %d: %v", i, err)
		}
	}
	for hash, n := range blobs.reads {
		if n != 1 {
			t.Errorf("blob %s read %d times, want once", hash[:12], n)
		}
	}

	// A segment whose content is not a segment is an error naming it.
	last := refs[len(refs)-1]
	forged := &countingBlobs{store: rt.Store(), reads: map[string]int{}, forged: map[string][]byte{}}
	for hash := range blobs.reads {
		if hash != last {
			forged.forged[hash] = []byte(`{"add": "not messages"}`)
		}
	}
	if _, err := flow.NewRequestLoader(forged).Load(ctx, last); err == nil || !strings.Contains(err.Error(), "request segment") {
		t.Fatalf("forged segments: %v", err)
	}
}
