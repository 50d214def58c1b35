package scripted_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath/flow/model/scripted"
)

func TestLoad(t *testing.T) {
	c, err := scripted.Load(filepath.Join("testdata", "review.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Description(), "A critic asks for one search, is rate limited once, then approves."; got != want {
		t.Errorf("Description() = %q, want %q", got, want)
	}
	if c.Remaining() != 3 {
		t.Errorf("Remaining() = %d, want 3", c.Remaining())
	}
}

func TestLoad_Errors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		body string
		want []string // substrings of the error
	}{
		{"syntax", "{\n  \"scripted\": true,\n  \"responses\": [,]\n}", []string{"bad.json", "line 3, column 17"}},
		{"not labelled", `{"description": "x", "responses": [{"content": "hi"}]}`, []string{"bad.json", `missing "scripted": true`}},
		{"labelled false", `{"scripted": false, "responses": [{"content": "hi"}]}`, []string{`missing "scripted": true`}},
		{"unknown top field", `{"scripted": true, "respones": []}`, []string{"bad.json", `unknown field "respones"`}},
		{"no responses", `{"scripted": true, "responses": []}`, []string{"no responses"}},
		{"unknown entry field", `{"scripted": true, "responses": [{"content": "a"}, {"contnet": "b"}]}`, []string{"responses[1]", `unknown field "contnet"`}},
		{"bad kind", `{"scripted": true, "responses": [{"error": {"kind": "oops"}}]}`, []string{"responses[0]", `error kind "oops"`}},
		{"error with content", `{"scripted": true, "responses": [{"content": "a", "error": {"kind": "server"}}]}`, []string{"responses[0]", "cannot also have content"}},
		{"bad pattern", `{"scripted": true, "responses": [{"content": "a"}, {"agent": "root.[", "content": "b"}]}`, []string{"responses[1]", `agent pattern "root.["`}},
		{"tool call without name", `{"scripted": true, "responses": [{"tool_calls": [{"arguments": {}}]}]}`, []string{"responses[0]", "tool_calls[0] has no name"}},
		{"bad arguments", `{"scripted": true, "responses": [{"tool_calls": [{"name": "f", "arguments": "{oops"}]}]}`, []string{"responses[0]", "tool_calls[0] (f): arguments are not valid JSON"}},
		{"unknown tool call field", `{"scripted": true, "responses": [{"tool_calls": [{"name": "f", "args": {}}]}]}`, []string{"responses[0]", `unknown field "args"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(dir, "bad.json")
			if err := os.WriteFile(file, []byte(tt.body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := scripted.Load(file)
			if !errors.Is(err, scripted.ErrCassette) {
				t.Fatalf("err = %v, want ErrCassette", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %q, want it to contain %q", err, w)
				}
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		_, err := scripted.Load(filepath.Join(dir, "nope.json"))
		if !errors.Is(err, scripted.ErrCassette) || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "nope.json") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestParse_ArgumentsAsStringOrObject(t *testing.T) {
	c, err := scripted.Parse([]byte(`{"scripted": true, "responses": [{"tool_calls": [
		{"name": "a", "arguments": "{\"x\": 1}"},
		{"name": "b", "arguments": {"y": [1, 2]}},
		{"name": "c"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Complete(t.Context(), user("go"))
	if err != nil {
		t.Fatal(err)
	}
	got := []string{resp.ToolCalls[0].Arguments, resp.ToolCalls[1].Arguments, resp.ToolCalls[2].Arguments}
	want := []string{`{"x": 1}`, `{"y":[1,2]}`, ""}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("call %d arguments = %q, want %q", i, got[i], want[i])
		}
	}
}
