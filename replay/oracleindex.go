package replay

import (
	"context"
	"sync"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// indexBatch is how many recorded events the oracle decodes, and fetches
// the answers' blobs for, between two publications of what it indexed.
const indexBatch = 256

func emptyOracle(store *eventlog.Store, strict bool) *oracle {
	o := &oracle{store: store, strict: strict, models: map[string][]attempt{}, tools: map[string][]toolRecord{},
		recalls: map[string][]recallRecord{}, commits: map[string][]commitRecord{}, effects: map[string][]*events.EffectRecorded{},
		questions: map[string][]events.ApprovalRequested{}, blobs: map[string][]byte{}}
	o.indexed = sync.NewCond(&o.mu)
	return o
}

// newOracle indexes the recorded events up to limit (0: all).
func newOracle(ctx context.Context, store *eventlog.Store, recorded []events.Event, limit int64, strict bool) (*oracle, error) {
	o := emptyOracle(store, strict)
	if err := o.index(ctx, recorded, limit); err != nil {
		return nil, err
	}
	return o, nil
}

// recordPages reads the record page by page: up to limit events after
// seq after, in seq order.
type recordPages func(ctx context.Context, after int64, limit int) ([]events.Event, error)

// runRecord reads the events of run with seq <= toSeq.
func runRecord(store *eventlog.Store, run string, toSeq int64) recordPages {
	return func(ctx context.Context, after int64, limit int) ([]events.Event, error) {
		return store.Read(ctx, eventlog.Query{RunID: run, FromSeq: after + 1, ToSeq: toSeq, Limit: limit})
	}
}

// startOracle reads the record and indexes it in the background, and
// returns at once: an answer waits only until the record entries it needs
// are indexed, so the replay starts before most of the record is read.
// Only a strict oracle may start so; a lenient one would take a
// not-yet-indexed entry for the record's end and go live. expect is how
// many events the record holds (a capacity hint). Call finish, or record,
// before dropping it.
func startOracle(ctx context.Context, store *eventlog.Store, pages recordPages, expect int) *oracle {
	o := emptyOracle(store, true)
	o.indexing = true
	go func() {
		rec := make([]events.Event, 0, expect)
		err := func() error {
			var after int64
			// Small pages first, so the first answers come soon; larger
			// ones after, so the whole record takes few queries.
			for page := indexBatch; ; page = min(4*page, maxRecordPage) {
				evs, err := pages(ctx, after, page)
				if err != nil {
					return err
				}
				rec = append(rec, evs...)
				if err := o.index(ctx, evs, 0); err != nil {
					return err
				}
				if len(evs) < page {
					return nil
				}
				after = evs[len(evs)-1].Seq
			}
		}()
		o.mu.Lock()
		o.indexing, o.indexErr, o.recorded = false, err, rec
		o.indexed.Broadcast()
		o.mu.Unlock()
	}()
	return o
}

// maxRecordPage bounds how many recorded events startOracle reads at once.
const maxRecordPage = 4096

// record waits for the background reading to end and returns the events
// it read, or its error.
func (o *oracle) record() ([]events.Event, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.await(func() bool { return false }); err != nil {
		return nil, err
	}
	return o.recorded, nil
}

// finish waits for the background indexing to end and returns its error.
func (o *oracle) finish() error {
	_, err := o.record()
	return err
}

// await blocks, while the record is being indexed, until ready reports
// that what the caller needs is indexed. It returns the error indexing
// stopped with, if any. Call it with o.mu held.
func (o *oracle) await(ready func() bool) error {
	for o.indexing && !ready() {
		o.indexed.Wait()
	}
	return o.indexErr
}

// answerTypes are the event types the oracle answers from.
func answerType(typ string) bool {
	switch typ {
	case events.TypeProviderCalled, events.TypeProviderFailed, events.TypeToolReturned, events.TypeMemoryRecalled,
		events.TypeMemoryCommitted, events.TypeEffectRecorded, events.TypeApprovalRequested:
		return true
	}
	return false
}

// index decodes the recorded events up to limit (0: all) in batches,
// reads the blobs their answers need in one query a batch, and adds them
// to the oracle's queues, in record order.
func (o *oracle) index(ctx context.Context, recorded []events.Event, limit int64) error {
	type decoded struct {
		ev *events.Event
		p  events.Payload
	}
	batch := make([]decoded, 0, indexBatch)
	for start := 0; start < len(recorded); start += indexBatch {
		batch = batch[:0]
		var refs []string
		end := min(start+indexBatch, len(recorded))
		past := false
		var lastSeq int64
		finished := false
		for i := start; i < end; i++ {
			ev := &recorded[i]
			if limit > 0 && ev.Seq > limit {
				past = true
				break
			}
			lastSeq = max(lastSeq, ev.Seq)
			if ev.Type == events.TypeRunFinished && ev.Stream == ev.RunID {
				finished = true
			}
			if !answerType(ev.Type) {
				continue
			}
			p, err := ev.Decode()
			if err != nil {
				return err
			}
			switch e := p.(type) {
			case *events.ProviderCalled:
				refs = append(refs, e.ResponseRef)
			case *events.ToolReturned:
				refs = append(refs, e.BlobRefs()...)
			}
			batch = append(batch, decoded{ev, p})
		}
		var blobs map[string][]byte
		if len(refs) > 0 {
			var err error
			if blobs, err = o.store.GetBlobs(ctx, refs); err != nil {
				return err
			}
		}
		o.mu.Lock()
		o.lastSeq, o.finished = max(o.lastSeq, lastSeq), o.finished || finished
		for ref, b := range blobs {
			o.blobs[ref] = b
		}
		for _, d := range batch {
			o.add(d.ev, d.p)
		}
		o.indexed.Broadcast()
		o.mu.Unlock()
		if past {
			break
		}
	}
	return nil
}

// add puts one recorded event into its queue. Call it with o.mu held.
func (o *oracle) add(ev *events.Event, p events.Payload) {
	at := key{ev.Stream, ev.Version}
	switch e := p.(type) {
	case *events.ProviderCalled:
		o.models[e.Agent] = append(o.models[e.Agent], attempt{seq: ev.Seq, at: at, called: e})
	case *events.ProviderFailed:
		if e.ErrorKind == "budget" {
			return // a budget stop is not a model attempt: the budget check replays it
		}
		o.models[e.Agent] = append(o.models[e.Agent], attempt{seq: ev.Seq, at: at, failed: e})
	case *events.ApprovalRequested:
		if e.Kind == events.ApprovalQuestion && e.CallID != "" {
			k := e.Session + "\x00" + e.CallID
			o.questions[k] = append(o.questions[k], *e)
		}
	case *events.ToolReturned:
		o.tools[e.Agent] = append(o.tools[e.Agent], toolRecord{seq: ev.Seq, at: at, ret: e})
	case *events.MemoryRecalled:
		o.recalls[e.Agent] = append(o.recalls[e.Agent], recallRecord{seq: ev.Seq, at: at, rec: e})
	case *events.EffectRecorded:
		k := e.Path + "\x00" + e.Kind
		o.effects[k] = append(o.effects[k], e)
	case *events.MemoryCommitted:
		// The commit's memories were appended with it, just before it:
		// the record gives the replay their position, not their text.
		k := e.Namespace + "\x00" + e.Session
		o.commits[k] = append(o.commits[k], commitRecord{first: ev.Version - int64(len(e.IDs)), rec: e})
	}
}

// commitRecord is a recorded commit to memory: the stream version of its
// first event, and its memory.committed event.
type commitRecord struct {
	first int64
	rec   *events.MemoryCommitted
}
