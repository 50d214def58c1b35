package replay

import (
	"encoding/json"
	"reflect"
	"strings"

	"github.com/gorath/rath/flow/model"
)

// requestChange says whether a model request differs from the recorded
// one in structure (other messages, roles, tool calls, arguments, tools
// offered, model or sampling) or only in the wording of its messages.
func requestChange(want, got model.Request) string {
	if len(want.Messages) != len(got.Messages) || want.Model != got.Model || want.ToolChoice != got.ToolChoice ||
		!reflect.DeepEqual(want.Sampling, got.Sampling) || !sameJSON(want.Tools, got.Tools) {
		return ChangeStructural
	}
	for i := range want.Messages {
		w, g := want.Messages[i], got.Messages[i]
		if w.Role != g.Role || w.Name != g.Name || w.ToolCallID != g.ToolCallID || !sameJSON(w.ToolCalls, g.ToolCalls) {
			return ChangeStructural
		}
	}
	return ChangeWording
}

// sameJSON compares a and b as JSON, an empty list or map being the same
// as none (a recorded request decodes "no tools" as an empty list).
func sameJSON(a, b any) bool {
	if empty(a) && empty(b) {
		return true
	}
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// textFields are payload fields that hold prose: a difference in them
// alone, the fields present on both sides, is a change of wording.
var textFields = map[string]bool{"content": true, "text": true, "system": true, "reason": true, "error": true, "summary": true}

// payloadChange classifies a mismatch between two events' canonical
// payloads: wording when they are of one type and differ only in the
// text of fields both have, else structural.
func payloadChange(wantType, want, gotType, got string) string {
	if wantType != gotType {
		return ChangeStructural
	}
	var w, g any
	if json.Unmarshal([]byte(want), &w) != nil || json.Unmarshal([]byte(got), &g) != nil {
		return ChangeStructural
	}
	fw, fg := map[string]string{}, map[string]string{}
	flatten("", w, fw)
	flatten("", g, fg)
	for p, v := range fw {
		gv, ok := fg[p]
		if !ok {
			return ChangeStructural
		}
		if gv != v && !textFields[leaf(p)] {
			return ChangeStructural
		}
	}
	for p := range fg {
		if _, ok := fw[p]; !ok {
			return ChangeStructural
		}
	}
	return ChangeWording
}

// leaf is the last field name of a flattened path ("chunks[0].content"
// gives "content").
func leaf(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		path = path[i+1:]
	}
	if i := strings.IndexByte(path, '['); i >= 0 {
		path = path[:i]
	}
	return path
}

func empty(v any) bool {
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.Slice, reflect.Map:
		return r.Len() == 0
	}
	return !r.IsValid()
}
