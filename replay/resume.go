package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
)

// Resume continues a run that started and never finished (the process
// crashed). wf's code runs again: every model call and tool call the
// record holds is answered from it, not repeated; once an agent's record
// runs out it goes on live, and each event past the record is written to
// rt's store as it is produced. A tool call recorded as called but never
// returned (the crash came in the middle of it) runs again.
func Resume(ctx context.Context, rt *rath.Runtime, runID string, wf flow.Workflow) (*rath.Run, error) {
	info, err := loadRun(ctx, rt, runID)
	if err != nil {
		return nil, err
	}
	if info.finished != nil {
		return nil, fmt.Errorf("%w: %s finished with status %s", ErrNotResumable, runID, info.finished.Status)
	}
	fw := &forwarder{dst: rt.Store(), runID: runID, recorded: map[key]string{}}
	for _, ev := range info.events {
		fw.recorded[key{ev.Stream, ev.Version}] = normalize(ev.Payload)
	}
	sc, err := newScratchWith(ctx, false, fw)
	if err != nil {
		return nil, err
	}
	defer sc.close()
	if err := copyLineage(ctx, rt, sc.rt, info.started.InputSession, info.startSeq, info.memoryStreams()...); err != nil {
		return nil, err
	}
	orc, err := newOracle(rt.Store(), info.events, 0, false)
	if err != nil {
		return nil, err
	}
	fw.start(ctx)
	out, err := execute(ctx, sc.rt, info, wf, orc)
	if err != nil {
		return nil, err
	}
	if d := fw.failure(); d != nil {
		return nil, d
	}
	if orc.diverged != nil {
		return nil, orc.diverged
	}
	run := &rath.Run{ID: runID, Seed: info.started.Seed}
	if out != nil {
		if run.Output, err = rt.Session(ctx, out.ID()); err != nil {
			return run, err
		}
	}
	return run, nil
}

// forwarder is a projector on the scratch store: events of the run that
// the record has are checked against it, and the others are appended to
// the real store in the same moment, with the blobs they reference.
type forwarder struct {
	dst      *events.Store
	runID    string
	recorded map[key]string // (stream, version) -> normalized payload

	mu       sync.Mutex // protects the fields below
	ctx      context.Context
	active   bool
	diverged *Divergence
}

func (f *forwarder) start(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ctx = events.ContextWithRun(context.WithoutCancel(ctx), events.Run{ID: f.runID})
	f.active = true
}

func (f *forwarder) failure() *Divergence {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.diverged
}

func (f *forwarder) Project(_ context.Context, tx *events.Tx, ev *events.Event, p events.Payload) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.active || ev.RunID != f.runID {
		return nil
	}
	if want, ok := f.recorded[key{ev.Stream, ev.Version}]; ok {
		if got := normalize(ev.Payload); got != want {
			d := &Divergence{Kind: KindMismatch, Type: ev.Type, Stream: ev.Stream, Version: ev.Version, Want: want, Got: got,
				Diff: fieldDiff(ev.Type, want, ev.Type, got), Hint: "the resumed code does not reproduce the recorded prefix: " + hintFor(KindMismatch, ev.Type)}
			if f.diverged == nil {
				f.diverged = d
			}
			return d
		}
		return nil
	}
	var blobs [][]byte
	if br, ok := p.(events.BlobReferrer); ok {
		for _, ref := range br.BlobRefs() {
			var b []byte
			if err := tx.QueryRow(`SELECT bytes FROM blobs WHERE hash = ?`, ref).Scan(&b); err != nil {
				return fmt.Errorf("replay: forward blob %s: %w", ref, err)
			}
			blobs = append(blobs, b)
		}
	}
	segs, err := f.messageSegments(tx, p)
	if err != nil {
		return err
	}
	blobs = append(blobs, segs...)
	_, err = f.dst.AppendWrites(f.ctx, events.Write{Stream: ev.Stream, Expected: ev.Version - 1, Events: []events.Payload{p}, Blobs: blobs})
	if err != nil {
		return fmt.Errorf("replay: forward %s v%d to the store: %w", ev.Stream, ev.Version, err)
	}
	return nil
}

// messageSegments returns the message segments a model request reaches
// through its messages_ref chain (flow/request.go) that the store does not
// hold yet: the request blob names only the last segment, and verify
// checks them all. Earlier calls of the loop forwarded the older ones.
func (f *forwarder) messageSegments(tx *events.Tx, p events.Payload) ([][]byte, error) {
	var req string
	switch e := p.(type) {
	case *events.ProviderCalled:
		req = e.RequestRef
	case *events.ProviderFailed:
		req = e.RequestRef
	}
	if req == "" {
		return nil, nil
	}
	var raw []byte
	if err := tx.QueryRow(`SELECT bytes FROM blobs WHERE hash = ?`, req).Scan(&raw); err != nil {
		return nil, fmt.Errorf("replay: forward request %s: %w", req, err)
	}
	var rec struct {
		MessagesRef string `json:"messages_ref"`
	}
	if json.Unmarshal(raw, &rec) != nil {
		return nil, nil
	}
	var out [][]byte
	for next := rec.MessagesRef; next != ""; {
		var one int
		if f.dst.DB().QueryRow(`SELECT 1 FROM blobs WHERE hash = ?`, next).Scan(&one) == nil {
			break // forwarded with an earlier call, and so is what precedes it
		}
		var b []byte
		if err := tx.QueryRow(`SELECT bytes FROM blobs WHERE hash = ?`, next).Scan(&b); err != nil {
			return nil, fmt.Errorf("replay: forward message segment %s: %w", next, err)
		}
		out = append(out, b)
		var seg struct {
			Prev string `json:"prev"`
		}
		if json.Unmarshal(b, &seg) != nil {
			break
		}
		next = seg.Prev
	}
	return out, nil
}
