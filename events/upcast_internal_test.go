package events

import (
	"encoding/json"
	"strings"
	"testing"
)

// placedV2 stands for a future version 2 of session.placed that renamed
// "spec" to "workspace": what bumping a real type would look like.
type placedV2 struct {
	Session   string `json:"session"`
	Backend   string `json:"backend"`
	Workspace string `json:"workspace"`
}

func (placedV2) EventType() string { return TypeSessionPlaced }
func (placedV2) EventVersion() int { return 2 }

// renameSpec is the upcaster from version 1 to 2.
func renameSpec(raw json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	m["workspace"] = m["spec"]
	delete(m, "spec")
	return json.Marshal(m)
}

// A payload stored at version 1 of a real type (written by SessionPlaced
// today) decodes into version 2 through the declared upcaster.
func TestDecode_UpcastsAnOldVersion(t *testing.T) {
	ti := &typeInfo{version: 2, newFn: func() Payload { return &placedV2{} }, upcasters: upcasts{1: renameSpec}}
	if err := ti.check(TypeSessionPlaced); err != nil {
		t.Fatal(err)
	}
	cat := map[string]*typeInfo{TypeSessionPlaced: ti}
	v1, err := Canonical(SessionPlaced{Session: "s", Backend: "bwrap", Spec: "./ws"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := decodeWith(cat, TypeSessionPlaced, 1, v1)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := p.(*placedV2); !ok || *got != (placedV2{Session: "s", Backend: "bwrap", Workspace: "./ws"}) {
		t.Fatalf("decoded %#v", p)
	}
	// Version 2 payloads decode as they are; an unknown field still fails.
	if _, err := decodeWith(cat, TypeSessionPlaced, 2, []byte(`{"session":"s","backend":"b","workspace":"w"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := decodeWith(cat, TypeSessionPlaced, 2, v1); err == nil || !strings.Contains(err.Error(), "unknown field") {
		t.Fatalf("v1 payload decoded as v2 without upcasting: %v", err)
	}
}

// A type bumped without an upcaster for every old version is caught when
// the catalogue is built.
func TestCatalogue_CheckDemandsEveryUpcaster(t *testing.T) {
	missing := &typeInfo{version: 3, upcasters: upcasts{2: renameSpec}}
	if err := missing.check("x"); err == nil || !strings.Contains(err.Error(), "no upcaster from version 1") {
		t.Fatalf("check = %v", err)
	}
	stray := &typeInfo{version: 1, upcasters: upcasts{1: renameSpec}}
	if err := stray.check("x"); err == nil {
		t.Fatal("an upcaster from the current version was accepted")
	}
	for name, ti := range catalogue {
		if err := ti.check(name); err != nil {
			t.Error(err)
		}
	}
}
