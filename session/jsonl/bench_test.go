package jsonl_test

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session/jsonl"
)

// benchFile returns an OpenRath file of n chunks for session id.
func benchFile(id string, n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"record_type":"header","id":%q,"parent_session_ids":[],"lineage_kind":"root"}`+"\n", id)
	for i := range n {
		kind := []string{"user", "assistant"}[i%2]
		fmt.Fprintf(&b, `{"record_type":"chunk","index":%d,"kind":%q,"payload":{"content":"message %d with some ordinary text in it"}}`+"\n", i, kind, i)
	}
	fmt.Fprintf(&b, `{"record_type":"trailer","final_chunk_count":%d,"cumulative_usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`+"\n", n)
	return b.Bytes()
}

// BenchmarkImport measures importing one 1000-chunk session (one
// transaction of 1001 events).
func BenchmarkImport(b *testing.B) {
	rt := MustOpen(b)
	ctx := b.Context()
	const chunks = 1000
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		data := benchFile(fmt.Sprintf("bench-%d", i), chunks)
		i++
		if _, err := jsonl.ImportSources(ctx, rt.Sessions(), jsonl.Source{Name: "bench", Reader: bytes.NewReader(data)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(chunks*b.N)/b.Elapsed().Seconds(), "chunks/s")
}

// BenchmarkExport measures exporting one 1000-chunk session.
func BenchmarkExport(b *testing.B) {
	rt := MustOpen(b)
	ctx := b.Context()
	s, err := rt.NewUserSession(ctx, "start")
	if err != nil {
		b.Fatal(err)
	}
	cs := make([]events.Chunk, 999)
	for i := range cs {
		cs[i] = events.Chunk{Role: "assistant", Content: fmt.Sprintf("message %d with some ordinary text in it", i)}
	}
	if s, err = s.Append(ctx, cs...); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := jsonl.Export(ctx, rt.Sessions(), s.ID(), io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(s.Len()*b.N)/b.Elapsed().Seconds(), "chunks/s")
}
