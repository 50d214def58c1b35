package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
	proto "github.com/gorath/rath/internal/oracle"
)

// recordCalls records n model calls of agent "a", each answered with its
// own response blob, and returns the recorded events.
func recordCalls(t *testing.T, n int) (*scratch, []events.Event) {
	t.Helper()
	ctx := t.Context()
	sc, err := newScratchWith(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.close() })
	for i := range n {
		resp, _ := json.Marshal(model.Response{Content: fmt.Sprint("answer ", i)})
		call := events.ProviderCalled{Session: "s", Agent: "a", Model: "m", Digest: fmt.Sprint("d", i), Attempt: 1, ResponseRef: eventlog.BlobHash(resp)}
		if _, err := sc.rt.Store().AppendWrites(ctx, eventlog.Write{Stream: "calls", Expected: eventlog.AnyVersion, Events: []events.Payload{call}, Blobs: [][]byte{resp}}); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := sc.rt.Store().Read(ctx, eventlog.Query{Stream: "calls"})
	if err != nil {
		t.Fatal(err)
	}
	return sc, evs
}

// While the record is indexed in the background, an answer waits for the
// entries it needs (the call's attempt and the one after it, which says
// whether a failure is retried) instead of taking a short queue for the
// record's end.
func TestOracle_AnswersWaitForIndexing(t *testing.T) {
	ctx := t.Context()
	sc, recorded := recordCalls(t, indexBatch+10)
	o := emptyOracle(sc.rt.Store(), true)
	o.indexing = true
	type answer struct {
		proto.ModelAnswer
		err error
	}
	got := make(chan answer, 1)
	go func() {
		a, err := o.Model(ctx, proto.ModelCall{Session: "s", Agent: "a", Digest: "d0", Attempt: 1})
		got <- answer{a, err}
	}()
	notYet := func(stage string) {
		select {
		case a := <-got:
			t.Fatalf("%s: answered %+v, %v before the record was indexed", stage, a.ModelAnswer, a.err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	notYet("nothing indexed")
	if err := o.index(ctx, recorded[:1], 0); err != nil {
		t.Fatal(err)
	}
	notYet("one attempt indexed")
	if err := o.index(ctx, recorded[1:], 0); err != nil {
		t.Fatal(err)
	}
	a := <-got
	if a.err != nil || a.Response.Content != "answer 0" {
		t.Fatalf("answer %+v, %v; want the first recorded response", a.ModelAnswer, a.err)
	}
	o.mu.Lock()
	o.indexing = false
	o.indexed.Broadcast()
	o.mu.Unlock()
	if err := o.finish(); err != nil {
		t.Fatal(err)
	}
	// The last attempt, once indexing is over, needs no successor.
	o.mu.Lock()
	o.models["a"] = o.models["a"][len(o.models["a"])-1:]
	o.mu.Unlock()
	last := fmt.Sprint("d", len(recorded)-1)
	if a, err := o.Model(ctx, proto.ModelCall{Session: "s", Agent: "a", Digest: last, Attempt: 1}); err != nil || a.Response.Content != fmt.Sprint("answer ", len(recorded)-1) {
		t.Fatalf("last answer %+v, %v", a, err)
	}
}

// A record the background indexing cannot read fails the answers waiting
// on it and finish, rather than passing for a shorter record.
func TestOracle_IndexingErrorReachesAnswers(t *testing.T) {
	ctx := t.Context()
	sc, recorded := recordCalls(t, 3)
	recorded[1].Payload = json.RawMessage(`{"session": 7}`) // not a provider.called
	pages := func(_ context.Context, after int64, limit int) ([]events.Event, error) {
		var page []events.Event
		for _, ev := range recorded {
			if ev.Seq > after && len(page) < limit {
				page = append(page, ev)
			}
		}
		return page, nil
	}
	o := startOracle(ctx, sc.rt.Store(), pages, len(recorded))
	if _, err := o.Model(ctx, proto.ModelCall{Session: "s", Agent: "a", Digest: "d0", Attempt: 1}); err == nil {
		t.Fatal("answered from a record that did not index")
	}
	if err := o.finish(); err == nil {
		t.Fatal("finish: no error for a record that did not index")
	}
}
