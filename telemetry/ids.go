package telemetry

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"sync"

	"go.opentelemetry.io/otel/trace"
)

// Ids are derived, not drawn: a hash of the run id (the trace) and of the
// run id and the seq of the event that opens a span. Exporting the same
// run twice, live or from the log, yields the same ids, so backends
// deduplicate instead of showing two traces.
const idDomain = "rath-otel-v1\x00"

// TraceID returns the trace id of a run.
func TraceID(runID string) trace.TraceID {
	sum := sha256.Sum256([]byte(idDomain + "trace\x00" + runID))
	var id trace.TraceID
	copy(id[:], sum[:])
	if !id.IsValid() {
		id[15] = 1
	}
	return id
}

// RootSpanID returns the span id of a run's root span. It depends on the
// run id alone, so a run forked from another can link to its parent's root
// without reading the parent's events.
func RootSpanID(runID string) trace.SpanID {
	return spanID(runID, "run", 0)
}

// SpanIDAt returns the span id of the span opened by the event at seq.
func SpanIDAt(runID string, seq int64) trace.SpanID {
	return spanID(runID, "seq", seq)
}

func spanID(runID, kind string, seq int64) trace.SpanID {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(seq))
	sum := sha256.Sum256(append([]byte(idDomain+kind+"\x00"+runID+"\x00"), n[:]...))
	var id trace.SpanID
	copy(id[:], sum[:])
	if !id.IsValid() {
		id[7] = 1
	}
	return id
}

type idsKey struct{}

type fixedIDs struct {
	trace trace.TraceID
	span  trace.SpanID
}

// withIDs returns a context that makes the next span started under it get
// these ids (through idGenerator).
func withIDs(ctx context.Context, t trace.TraceID, s trace.SpanID) context.Context {
	return context.WithValue(ctx, idsKey{}, fixedIDs{trace: t, span: s})
}

// idGenerator hands out the ids put in the context by withIDs, and random
// ones otherwise (for spans a program starts itself on the same provider).
type idGenerator struct {
	mu  sync.Mutex // protects rnd
	rnd *rand.ChaCha8
}

func newIDGenerator() *idGenerator {
	var seed [32]byte
	for i := range 4 {
		binary.LittleEndian.PutUint64(seed[i*8:], rand.Uint64())
	}
	return &idGenerator{rnd: rand.NewChaCha8(seed)}
}

// NewIDs implements sdktrace.IDGenerator.
func (g *idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if f, ok := ctx.Value(idsKey{}).(fixedIDs); ok {
		return f.trace, f.span
	}
	var t trace.TraceID
	g.fill(t[:])
	return t, g.NewSpanID(ctx, t)
}

// NewSpanID implements sdktrace.IDGenerator.
func (g *idGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if f, ok := ctx.Value(idsKey{}).(fixedIDs); ok {
		return f.span
	}
	var s trace.SpanID
	g.fill(s[:])
	return s
}

func (g *idGenerator) fill(b []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		for i := 0; i < len(b); i += 8 {
			var w [8]byte
			binary.LittleEndian.PutUint64(w[:], g.rnd.Uint64())
			copy(b[i:], w[:])
		}
		for _, c := range b {
			if c != 0 {
				return
			}
		}
	}
}
