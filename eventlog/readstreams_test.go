package eventlog_test

import (
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// ReadStreams returns each stream's events in version order, as many
// ReadStream calls would, and nothing of the streams it was not asked for.
func TestStore_ReadStreams(t *testing.T) {
	ctx := t.Context()
	s := MustOpenStore(t, eventlog.Options{})
	for i, st := range []string{"a", "b", "a", "c", "a"} {
		if _, err := s.Append(ctx, st, eventlog.AnyVersion, placed(st, string(rune('0'+i)))); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ReadStreams(ctx, "a", "c", "missing")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["b"] != nil || got["missing"] != nil {
		t.Fatalf("streams %v, want a and c only", keys(got))
	}
	for _, st := range []string{"a", "c"} {
		want, err := s.ReadStream(ctx, st, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(got[st]) != len(want) {
			t.Fatalf("stream %s: %d events, ReadStream has %d", st, len(got[st]), len(want))
		}
		for i := range want {
			if got[st][i].Seq != want[i].Seq || got[st][i].Version != int64(i+1) || string(got[st][i].Payload) != string(want[i].Payload) {
				t.Fatalf("stream %s event %d: %+v, want %+v", st, i, got[st][i], want[i])
			}
		}
	}
	if none, err := s.ReadStreams(ctx); err != nil || len(none) != 0 {
		t.Fatalf("no streams: %v, %v", none, err)
	}
}

func keys(m map[string][]events.Event) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
