package replay

import (
	"strings"
	"testing"

	"github.com/gorath/rath/events"
)

func ev(seq int64, stream string, version int64, typ, payload string) events.Event {
	return events.Event{Seq: seq, Stream: stream, Version: version, Type: typ, Payload: []byte(payload)}
}

// TestCompare_ReportText checks the report a reader gets for each kind of
// divergence: the recorded event's place with its version, and a hint
// that fits the kind (a different event type is a changed code path, not
// a changed prompt).
func TestCompare_ReportText(t *testing.T) {
	called := ev(10, "s-1", 3, events.TypeProviderCalled, `{"agent":"root","digest":"d1","response_ref":"r1"}`)
	chunk := ev(11, "s-1", 4, events.TypeChunkAppended, `{"content":"hello"}`)
	cases := []struct {
		name               string
		recorded, produced []events.Event
		kind               string
		want, notWant      []string
	}{
		{
			name:     "payload mismatch of a model call",
			recorded: []events.Event{called},
			produced: []events.Event{ev(20, "s-1", 3, events.TypeProviderCalled, `{"agent":"root","digest":"d1","response_ref":"r2"}`)},
			kind:     ClassMismatch,
			want:     []string{"mismatch at seq 10 (provider.called on s-1 v3)", "model call's record differs", "response_ref"},
			notWant:  []string{"v0", "code path"},
		},
		{
			name:     "payload mismatch of a chunk",
			recorded: []events.Event{chunk},
			produced: []events.Event{ev(20, "s-1", 4, events.TypeChunkAppended, `{"content":"bye"}`)},
			kind:     ClassMismatch,
			want:     []string{"mismatch at seq 11 (chunk.appended on s-1 v4)", "transcript differs"},
			notWant:  []string{"v0", "prompt"},
		},
		{
			name:     "type mismatch",
			recorded: []events.Event{called},
			produced: []events.Event{ev(20, "s-1", 3, events.TypeToolCalled, `{"tool":"ls"}`)},
			kind:     ClassMismatch,
			want:     []string{"mismatch at seq 10 (provider.called on s-1 v3)", "wrote tool.called where the record has provider.called", "code path changed", "- type provider.called"},
			notWant:  []string{"v0", "prompt"},
		},
		{
			name:     "missing",
			recorded: []events.Event{called, chunk},
			produced: []events.Event{ev(20, "s-1", 3, events.TypeProviderCalled, string(called.Payload))},
			kind:     ClassMissing,
			want:     []string{"missing at seq 11 (chunk.appended on s-1 v4)", "did not produce this chunk.appended event"},
			notWant:  []string{"v0", "prompt"},
		},
		{
			name:     "extra",
			recorded: []events.Event{called},
			produced: []events.Event{ev(20, "s-1", 3, events.TypeProviderCalled, string(called.Payload)), ev(21, "s-1", 4, events.TypeChunkAppended, `{"content":"more"}`)},
			kind:     ClassExtra,
			want:     []string{"extra at seq 10 (chunk.appended on s-1 v4)", "produced a chunk.appended event the record does not have"},
			notWant:  []string{"v0", "prompt"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, d := compareIgnoring(tc.recorded, tc.produced, ignored)
			if d == nil || d.Class != tc.kind {
				t.Fatalf("divergence = %+v, want kind %s", d, tc.kind)
			}
			text := d.Error()
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("report lacks %q:\n%s", w, text)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(text, w) {
					t.Errorf("report has %q:\n%s", w, text)
				}
			}
		})
	}
}

// A divergence found by the oracle names the recorded event's version;
// one with no recorded event (an extra call) names none rather than v0.
func TestDivergence_VersionInText(t *testing.T) {
	d := &Divergence{Class: ClassExtra, Seq: 7, Type: events.TypeProviderCalled, Stream: "s-1", Hint: "extra model call"}
	if got := d.Error(); strings.Contains(got, "v0") || !strings.Contains(got, "(provider.called on s-1)") {
		t.Fatalf("text = %q", got)
	}
}
