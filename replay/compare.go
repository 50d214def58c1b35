package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/gorath/rath/events"
)

// ignored are payload fields that hold wall-clock measurements or build
// facts, which a faithful replay may change (an approval deadline is
// counted from the wall clock when the request is made).
var ignored = map[string]bool{"latency_ms": true, "duration_ms": true, "code_version": true, "deadline": true}

func withIgnored(fields ...string) map[string]bool {
	m := map[string]bool{}
	for k := range ignored {
		m[k] = true
	}
	for _, f := range fields {
		m[f] = true
	}
	return m
}

// normalize returns the payload's canonical JSON without ignored fields.
func normalize(payload []byte) string { return normalizeIgnoring(payload, ignored) }

func normalizeIgnoring(payload []byte, ignore map[string]bool) string {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(payload)
	}
	strip(v, ignore)
	out, err := json.Marshal(v)
	if err != nil {
		return string(payload)
	}
	return string(out)
}

func strip(v any, ignore map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if ignore[k] {
				delete(x, k)
				continue
			}
			strip(val, ignore)
		}
	case []any:
		for _, e := range x {
			strip(e, ignore)
		}
	}
}

type key struct {
	stream  string
	version int64
}

// compare matches recorded and produced events by (stream, version) and
// returns how many matched and the first divergence by recorded seq.
func compareIgnoring(recorded, produced []events.Event, ignore map[string]bool) (matched int, d *Divergence) {
	normalize := func(p []byte) string { return normalizeIgnoring(p, ignore) }
	got := make(map[key]events.Event, len(produced))
	for _, ev := range produced {
		got[key{ev.Stream, ev.Version}] = ev
	}
	seen := make(map[key]bool, len(recorded))
	for _, want := range recorded {
		k := key{want.Stream, want.Version}
		seen[k] = true
		g, ok := got[k]
		if !ok {
			if d == nil {
				d = &Divergence{Class: ClassMissing, Seq: want.Seq, Type: want.Type, Stream: want.Stream, Version: want.Version,
					Want: normalize(want.Payload), Hint: hintFor(ClassMissing, want.Type, ""), Change: ChangeStructural}
			}
			continue
		}
		if g.Type == want.Type && bytes.Equal(g.Payload, want.Payload) {
			matched++
			continue
		}
		w, gp := normalize(want.Payload), normalize(g.Payload)
		if g.Type != want.Type || w != gp {
			if d == nil {
				d = &Divergence{Class: ClassMismatch, Seq: want.Seq, Type: want.Type, Stream: want.Stream, Version: want.Version,
					Want: w, Got: gp, Diff: fieldDiff(want.Type, w, g.Type, gp), Hint: hintFor(ClassMismatch, want.Type, g.Type),
					Change: payloadChange(want.Type, w, g.Type, gp)}
			}
			continue
		}
		matched++
	}
	if d == nil {
		var last int64
		if len(recorded) > 0 {
			last = recorded[len(recorded)-1].Seq
		}
		for _, ev := range produced {
			if !seen[key{ev.Stream, ev.Version}] {
				return matched, &Divergence{Class: ClassExtra, Seq: last, Type: ev.Type, Stream: ev.Stream, Version: ev.Version,
					Got: normalize(ev.Payload), Hint: hintFor(ClassExtra, "", ev.Type), Change: ChangeStructural}
			}
		}
	}
	return matched, d
}

// hintFor says what a divergence of kind suggests changed: want is the
// recorded event's type, got the replayed one's ("" where there is none).
// Only a payload mismatch between events of one type says anything about
// that type's content; a different type at the same place, or an event
// only one side has, means the code took another path.
func hintFor(kind, want, got string) string {
	switch {
	case kind == ClassMissing:
		return fmt.Sprintf("the replay did not produce this %s event: the code path changed, or the replay stopped earlier", want)
	case kind == ClassExtra:
		return fmt.Sprintf("the replay produced a %s event the record does not have: the code path changed", got)
	case want != got:
		return fmt.Sprintf("the replay wrote %s where the record has %s: the code path changed (different steps, calls or order)", got, want)
	}
	switch {
	case want == events.TypeProviderCalled || want == events.TypeProviderFailed:
		return "the model call's record differs: the provider settings, usage accounting or the model's recorded answer changed"
	case want == events.TypeToolCalled:
		return "the tool call differs: the model's call was handled differently (arguments, tool or call id)"
	case want == events.TypeToolReturned:
		return "the tool result differs: the tool's output or file changes changed"
	case want == events.TypeChunkAppended:
		return "the transcript differs: a chunk written by the code changed"
	case want == events.TypeMemoryRemembered || want == events.TypeMemoryCommitted:
		return "the memory write differs: memo extraction or archiving changed"
	case strings.HasPrefix(want, "workflow."):
		return "the workflow structure changed (module paths or order)"
	case strings.HasPrefix(want, "session."):
		return "session lineage changed (a fork, merge or placement differs)"
	case strings.HasPrefix(want, "run."):
		return "the run's outcome differs"
	}
	return "the event content differs"
}

// fieldDiff lists the top-level and nested fields that differ.
func fieldDiff(wantType, want, gotType, got string) string {
	if wantType != gotType {
		return fmt.Sprintf("- type %s\n+ type %s", wantType, gotType)
	}
	var w, g any
	json.Unmarshal([]byte(want), &w)
	json.Unmarshal([]byte(got), &g)
	fw, fg := map[string]string{}, map[string]string{}
	flatten("", w, fw)
	flatten("", g, fg)
	paths := map[string]bool{}
	for p := range fw {
		paths[p] = true
	}
	for p := range fg {
		paths[p] = true
	}
	var keys []string
	for p := range paths {
		if fw[p] != fg[p] {
			keys = append(keys, p)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, p := range keys {
		if i == 8 {
			fmt.Fprintf(&b, "(%d more fields differ)\n", len(keys)-i)
			break
		}
		fmt.Fprintf(&b, "%s:\n- %s\n+ %s\n", p, clip(fw[p]), clip(fg[p]))
	}
	return strings.TrimRight(b.String(), "\n")
}

func flatten(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			flatten(joinPath(prefix, k), val, out)
		}
	case []any:
		for i, val := range x {
			flatten(fmt.Sprintf("%s[%d]", prefix, i), val, out)
		}
	default:
		b, _ := json.Marshal(x)
		out[prefix] = string(b)
	}
}

func joinPath(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}
