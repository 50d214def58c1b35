package eval_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gorath/rath/eval"
)

// Every bad spec is ErrSpec, with nothing built; good ones carry their
// configuration in their name.
func TestParseSpec(t *testing.T) {
	dir := t.TempDir()
	schema := filepath.Join(dir, "schema.json")
	os.WriteFile(schema, []byte(`{"type": "object", "required": ["answer"]}`), 0o644)
	notSchema := filepath.Join(dir, "not.json")
	os.WriteFile(notSchema, []byte(`{"type": `), 0o644)
	for _, tc := range []struct {
		spec, name string // name "" means ErrSpec
	}{
		{"contains:Paris", "contains:Paris"},
		{"exact:", "exact:"},
		{"regex:^a+$", "regex:^a+$"},
		{"json_schema:" + schema, "json_schema:" + schema},
		{"tool_called:ls", "tool_called:ls"},
		{"no_tool_error", "no_tool_error"},
		{"max_tokens:100", "max_tokens:100"},
		{"max_latency:90s", "max_latency:1m30s"},
		{"contains:", ""},
		{"contains", ""},
		{"regex:(", ""},
		{"json_schema:" + notSchema, ""},
		{"json_schema:" + filepath.Join(dir, "missing.json"), ""},
		{"no_tool_error:x", ""},
		{"max_tokens:-1", ""},
		{"max_tokens:many", ""},
		{"max_latency:0s", ""},
		{"max_latency:soon", ""},
		{"judge:" + schema, ""}, // no runtime to record its calls
		{"bleu:x", ""},
		{"", ""},
	} {
		sc, err := eval.ParseSpec(tc.spec, eval.SpecOptions{})
		switch {
		case tc.name == "" && !errors.Is(err, eval.ErrSpec):
			t.Errorf("ParseSpec(%q) = %v, %v; want ErrSpec", tc.spec, sc, err)
		case tc.name != "" && (err != nil || sc.Name() != tc.name || sc.Version() == ""):
			t.Errorf("ParseSpec(%q) = %v, %v; want the scorer %s", tc.spec, sc, err, tc.name)
		}
	}
}
