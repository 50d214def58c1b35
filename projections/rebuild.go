package projections

import (
	"context"
	"errors"
	"fmt"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// tables is the one list of the SQL projections, in an order safe for
// deleting, each with its primary key (the order Check walks it). A new
// read model is added here and nowhere else.
var tables = []struct {
	name string
	key  []string
}{
	{"session_edges", []string{"child", "parent"}},
	{"usage", []string{"seq"}},
	{"runs", []string{"id"}},
	{"sessions", []string{"id"}},
	{"id_counters", []string{"scope"}},
	{"run_leases", []string{"run"}},
	{"session_snapshots", []string{"session", "seq"}},
	{"approvals", []string{"id"}},
	{"api_tokens", []string{"id"}},
	{"access_records", []string{"seq"}},
	{"datasets", []string{"name"}},
	{"memory_namespaces", []string{"namespace"}},
	{"sealed_by_key", []string{"key_id", "seq"}},
}

// Tables are the SQL projections Rebuild clears and refills, in an order
// safe for deleting. projection_checkpoints is not among them: it belongs
// to asynchronous projections (the memory index) with their own rebuild.
var Tables = func() []string {
	out := make([]string, len(tables))
	for i, t := range tables {
		out[i] = t.name
	}
	return out
}()

// RebuildStats reports a rebuild.
type RebuildStats struct {
	Events int64
}

// Rebuild drops every SQL projection row and replays the whole log through
// the projector, in one exclusive transaction: readers see the old state
// until it commits, and a failure leaves the old state in place. The head
// is read inside that transaction, which holds SQLite's write lock, so no
// event, from this process or another, can commit between reading the head
// and replacing the rows: every event is in the rebuilt projections, and
// appends made meanwhile wait for the rebuild and then apply to its result.
// progress, if set, is called with events done and the total.
func Rebuild(ctx context.Context, store *eventlog.Store, progress func(done, total int64)) (RebuildStats, error) {
	var stats RebuildStats
	var head int64
	err := store.Exclusive(ctx, func(ctx context.Context, tx *eventlog.Tx) error {
		stats = RebuildStats{}
		if err := tx.QueryRow(`SELECT COALESCE(MAX(seq), 0) FROM events`).Scan(&head); err != nil {
			return fmt.Errorf("projections: rebuild: read head: %w", err)
		}
		for _, t := range Tables {
			if _, err := tx.Exec(`DELETE FROM ` + t); err != nil {
				return fmt.Errorf("projections: clear %s: %w", t, err)
			}
		}
		n, err := replayLog(ctx, tx, store, head, progress)
		stats.Events = n
		return err
	})
	if err != nil {
		return RebuildStats{}, err
	}
	if progress != nil {
		progress(stats.Events, head)
	}
	return stats, nil
}

// replayLog projects the events of store up to seq `to` through tx, which
// must hold empty projection tables, and returns how many it applied.
func replayLog(ctx context.Context, tx *eventlog.Tx, store *eventlog.Store, to int64, progress func(done, total int64)) (int64, error) {
	var n int64
	if to == 0 {
		return 0, nil // an empty log (and ToSeq 0 would mean "to the head")
	}
	// The shapes kept of redacted events stand in for their payloads
	// (eventlog/shape.go). All of them, past `to` too: a redaction clears
	// payloads up to the head in the transaction of its record.
	shapes, err := store.Shapes(ctx)
	if err != nil {
		return 0, fmt.Errorf("projections: rebuild: %w", err)
	}
	a := &applier{ctx: ctx, tx: tx, src: store, cache: map[string]*sessionInfo{}, bulk: newRebuildRows(), redactedRequests: map[string]bool{}}
	// Read and decode on another goroutine while this one writes: the two
	// halves cost about the same. They hand over batches, not events: a
	// channel operation an event cost more than a chunk's decoding.
	readCtx, stop := context.WithCancel(ctx)
	defer stop()
	decoded := make(chan []decodedEvent, 4)
	go decodeLog(readCtx, store, to, shapes, decoded)
	for batch := range decoded {
		for i := range batch {
			d := &batch[i]
			if d.err != nil {
				return n, fmt.Errorf("projections: rebuild: %w", d.err)
			}
			var err error
			switch {
			case d.unread:
				err = a.passThrough(&d.ev)
			case d.payload == nil && d.ev.Redacted:
				err = a.redacted(&d.ev)
			case d.payload == nil:
				// A type this build does not know: it still moves its stream's version.
				err = a.touch(&d.ev)
			default:
				err = a.project(&d.ev, d.payload)
			}
			if err != nil {
				return n, fmt.Errorf("projections: rebuild at seq %d: %w", d.ev.Seq, err)
			}
			n++
			if progress != nil && n%5000 == 0 {
				progress(n, to)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return n, err
	}
	return n, a.flush()
}

// passThrough applies an event of a type apply reads nothing of (readPayloads):
// what project does with it, without decoding its payload.
func (a *applier) passThrough(ev *events.Event) error {
	if err := a.touch(ev); err != nil {
		return err
	}
	if ev.Version%SnapshotEvery != 0 {
		return nil
	}
	return a.snapshot(ev)
}

type decodedEvent struct {
	ev      events.Event
	payload events.Payload // nil for a type this build does not know, or a redacted event without a shape
	// unread is set, and payload nil, for a type apply reads nothing of.
	unread bool
	err    error
}

// appliedPayloads are the payloads apply reads: a rebuild decodes only
// theirs, and moves the streams of the rest on (about a quarter of an
// agent's log: its tool calls). TestAppliedPayloads_AreApplysCases keeps
// the list in step with apply.
var appliedPayloads = []events.Payload{
	events.SessionCreated{}, events.ChunkAppended{}, events.SessionForked{}, events.SessionDetached{},
	events.SessionMerged{}, events.SessionPlaced{}, events.SessionImported{}, events.SessionCompressed{},
	events.ProviderCalled{}, events.RunStarted{}, events.RunFinished{}, events.RunSubmitted{}, events.RunLeased{},
	events.ApprovalRequested{}, events.DatasetCreated{}, events.MemoryRemembered{}, events.ApprovalDecided{},
	events.TokenCreated{}, events.TokenRevoked{}, events.AccessViewed{},
}

// readPayloads are appliedPayloads' types.
var readPayloads = func() map[string]bool {
	out := map[string]bool{}
	for _, p := range appliedPayloads {
		out[p.EventType()] = true
	}
	return out
}()

// decodeBatch is how many decoded events go over the channel at once.
const decodeBatch = 256

// decodeLog sends the log up to seq `to`, decoded, and closes out; a
// redacted event with a kept shape is sent as its shape. It stops at the
// first error, which it sends.
func decodeLog(ctx context.Context, store *eventlog.Store, to int64, shapes map[int64]events.Shape, out chan<- []decodedEvent) {
	defer close(out)
	batch := make([]decodedEvent, 0, decodeBatch)
	send := func() bool {
		select {
		case out <- batch:
			batch = make([]decodedEvent, 0, decodeBatch)
			return true
		case <-ctx.Done():
			return false
		}
	}
	known := events.Types()
	for ev, err := range store.Scan(ctx, eventlog.Query{ToSeq: to}) {
		if err != nil {
			batch = append(batch, decodedEvent{err: err})
			send()
			return
		}
		if v, ok := known[ev.Type]; ok && !readPayloads[ev.Type] && !ev.Redacted && ev.TypeVersion <= v {
			// Its payload is not read. A redacted event, or a version newer
			// than this build knows (for its error), goes the long way.
			batch = append(batch, decodedEvent{ev: ev, unread: true})
			if len(batch) == decodeBatch && !send() {
				return
			}
			continue
		}
		var p events.Payload
		if ev.Type == events.TypeChunkAppended {
			// Most of a log; the fast path decodes it several times faster.
			var ca events.ChunkAppended
			if ca, err = events.DecodeChunkAppended(ev.Payload, ev.TypeVersion); err == nil {
				p = &ca
			} else {
				p, err = ev.Decode() // for the error naming the seq
			}
		} else {
			p, err = ev.Decode()
		}
		if sh, ok := shapes[ev.Seq]; ok && errors.Is(err, events.ErrRedacted) {
			p, err = sh.Decode(ev.Type)
		}
		if errors.Is(err, events.ErrUnknownType) || errors.Is(err, events.ErrRedacted) {
			// A redacted event, like one of a type this build does not
			// know, still moves its stream's version (and keeps what its
			// leaf says of its shape: applier.redacted).
			p, err = nil, nil
		}
		if err != nil {
			batch = append(batch, decodedEvent{err: err})
			send()
			return
		}
		batch = append(batch, decodedEvent{ev: ev, payload: p})
		if len(batch) == decodeBatch && !send() {
			return
		}
	}
	if len(batch) > 0 {
		send()
	}
}
