package events

import (
	"bytes"
	"testing"
)

// FuzzStoredPayload: a chunk.appended payload comes back from its row
// byte for byte, whatever the stream's name; any other payload is stored
// as it is.
func FuzzStoredPayload(f *testing.F) {
	f.Add("s-f2c42d246c09300e5499", "hello", int64(3), TypeChunkAppended)
	f.Add(`we"ird\stream`, "\x1b[31m\u2028", int64(0), TypeChunkAppended)
	f.Add("s1", "x", int64(1), TypeSessionPlaced)
	f.Fuzz(func(t *testing.T, stream, content string, index int64, typ string) {
		payload, err := Canonical(ChunkAppended{Session: stream, Index: index, Chunk: Chunk{Role: RoleUser, Content: content}})
		if err != nil {
			t.Skip()
		}
		stored := CompactPayload(stream, typ, payload)
		if typ == TypeChunkAppended && len(stored) >= len(payload) {
			t.Fatalf("not compacted: %s", stored)
		}
		if typ != TypeChunkAppended && !bytes.Equal(stored, payload) {
			t.Fatalf("a %s payload changed: %s", typ, stored)
		}
		if got := ExpandStored(stream, typ, stored); !bytes.Equal(got, payload) {
			t.Fatalf("stream %q:\nstored   %s\nexpanded %s\nwant     %s", stream, stored, got, payload)
		}
		// A payload naming another session is stored whole.
		if other := stream + "x"; typ == TypeChunkAppended {
			if s := CompactPayload(other, typ, payload); !bytes.Equal(s, payload) || !bytes.Equal(ExpandStored(other, typ, s), payload) {
				t.Fatalf("another stream's payload: stored %s", s)
			}
		}
	})
}

// FuzzStreamPrefix: the quick quoting of plain stream names writes what
// the encoder writes, for every name.
func FuzzStreamPrefix(f *testing.F) {
	for _, s := range []string{"s-f2c42d246c09300e5499", "", "<a&b>", `q"`, `b\`, "\x7f", "\x1f", "é", "\u2028", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, stream string) {
		quoted, err := Canonical(stream)
		if err != nil {
			t.Fatal(err)
		}
		want := append(append(append([]byte{}, sessionKey...), quoted...), ',')
		if got := streamPrefix(stream); !bytes.Equal(got, want) {
			t.Fatalf("stream %q: prefix %s, want %s", stream, got, want)
		}
	})
}
