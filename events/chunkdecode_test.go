package events

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func chunkPayloads(tb testing.TB) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, ca := range []ChunkAppended{
		{Session: "s-1", Index: 0, Chunk: Chunk{Role: RoleUser, Content: "hello"}},
		{Session: "s-1", Index: 7, Chunk: Chunk{Role: RoleAssistant, Author: "root.a", ToolCalls: []ToolCall{{ID: "c1", Name: "sh", Arguments: `{"cmd":"ls"}`}}}},
		{Session: "s-2", Index: 1999, Chunk: Chunk{Role: RoleToolResult, ToolCallID: "c1", Name: "sh", Content: "line\n\"quoted\" \x1b[31m é \u2028", Meta: map[string]string{"b": "2", "a": "1"}}},
		{Session: "s-3", Index: 3, Chunk: Chunk{Role: RoleUser, Content: strings.Repeat("x", 200)}},
	} {
		b, err := Canonical(ca)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	return append(out,
		[]byte(`{"session":"s","index":1,"chunk":{"role":"user","content":"a","content":"b"}}`),
		[]byte(`{"session":"s","index":1,"chunk":{"role":"user","Content":"a"}}`),
		[]byte(`{"session":"s","index":1,"index":2,"chunk":{"role":"user"}}`),
		[]byte(`{"session":"s","index":1.5,"chunk":{"role":"user"}}`),
		[]byte(`{"session":"s","index":1,"chunk":{"role":"user","content":"\ud800"}}`),
		[]byte("{\"session\":\"s\",\"index\":1,\"chunk\":{\"role\":\"user\",\"content\":\"\xff\"}}"),
		[]byte(`{"session":"s","index":1,"chunk":{"role":"user"}} trailing`),
		[]byte(`{"session":"s","index":1,"chunk":null}`),
		[]byte(`[]`),
	)
}

// FuzzDecodeChunkAppended holds the fast path to Decode's result: the same
// value, or an error from both.
func FuzzDecodeChunkAppended(f *testing.F) {
	for _, p := range chunkPayloads(f) {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		want, werr := Decode(TypeChunkAppended, 1, payload)
		got, gerr := DecodeChunkAppended(payload, 1)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: Decode error %v, DecodeChunkAppended error %v", payload, werr, gerr)
		}
		if werr == nil && !reflect.DeepEqual(*want.(*ChunkAppended), got) {
			t.Fatalf("%q:\nDecode              %#v\nDecodeChunkAppended %#v", payload, want, got)
		}
	})
}

func TestDecodeChunkAppended_TakesTheFastPathForCanonicalPayloads(t *testing.T) {
	for _, p := range chunkPayloads(t)[:4] {
		var ca ChunkAppended
		if !canonicalChunkAppended(p, nil, &ca) {
			t.Errorf("canonical payload not taken by the fast path: %s", p)
		}
	}
}

func BenchmarkDecodeChunkAppended(b *testing.B) {
	p := chunkPayloads(b)[3]
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			if _, err := DecodeChunkAppended(p, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := Decode(TypeChunkAppended, 1, p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzDecodeStoredChunkAppended holds the stored-form decoder to decoding
// the expanded payload.
func FuzzDecodeStoredChunkAppended(f *testing.F) {
	for _, p := range chunkPayloads(f) {
		f.Add("s-1", p)
		f.Add("s-1", CompactPayload("s-1", TypeChunkAppended, p))
		f.Add("s-3", CompactPayload("s-3", TypeChunkAppended, p))
	}
	f.Fuzz(func(t *testing.T, stream string, stored []byte) {
		want, werr := DecodeChunkAppended(ExpandStored(stream, TypeChunkAppended, stored), 1)
		got, gerr := DecodeStoredChunkAppended(stream, stored, 1)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q %q: expanded error %v, stored error %v", stream, stored, werr, gerr)
		}
		if werr == nil && !reflect.DeepEqual(want, got) {
			t.Fatalf("%q %q:\nexpanded %#v\nstored   %#v", stream, stored, want, got)
		}
	})
}

func TestDecodeStoredChunkAppended_TakesTheFastPath(t *testing.T) {
	for _, p := range chunkPayloads(t)[:4] {
		var ca ChunkAppended
		if err := json.Unmarshal(p, &ca); err != nil {
			t.Fatal(err)
		}
		var got ChunkAppended
		if !canonicalChunkAppended(CompactPayload(ca.Session, TypeChunkAppended, p), &ca.Session, &got) {
			t.Errorf("stored payload not taken by the fast path: %s", p)
		}
	}
}

func TestPlainASCII(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want bool
	}{
		{"", true}, {"hello", true}, {"message 1999: xxxxxxxxxxxxxxxx~ !", true},
		{"0123456789abcdef\x1f", false}, {"01234567\x00abc", false}, {"\x7f1234567", true},
		{"é", false}, {"abcdefgh\x80", false}, {"abcdefg\x19h", false}, {" \x20\x21", true},
	} {
		if got := plainASCII([]byte(tt.in)); got != tt.want {
			t.Errorf("plainASCII(%q) = %v, want %v", tt.in, got, tt.want)
		}
		// The same as asking byte by byte.
		want := true
		for _, ch := range []byte(tt.in) {
			if ch < 0x20 || ch >= 0x80 {
				want = false
			}
		}
		if want != tt.want {
			t.Fatalf("table row %q is wrong", tt.in)
		}
	}
}
