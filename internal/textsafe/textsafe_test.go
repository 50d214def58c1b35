package textsafe_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gorath/rath/internal/textsafe"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		hidden   bool
	}{
		{"ls -la\n\tx", "ls -la\n\tx", false},
		{"héllo 日本 ✓", "héllo 日本 ✓", false},
		{"X=\u2067\u2066 rm -f important.txt \u2069 # \u2066ls -la\u2069\u2069", `X=\u2067\u2066 rm -f important.txt \u2069 # \u2066ls -la\u2069\u2069`, true},
		{"a\u200bb\u200dc\ufeffd\u00ade", `a\u200bb\u200dc\ufeffd\u00ade`, true},
		{"rm\u00a0-rf", `rm\u00a0-rf`, true},
		{"tag\U000e0072\U000e006d", `tag\U000e0072\U000e006d`, true},
		{"vs\ufe0f\U000e0100", `vs\ufe0f\U000e0100`, true},
		{"line\u2028sep\u2029", `line\u2028sep\u2029`, true},
		{"esc\x1b[2J\r\x7f\u009b", `esc\x1b[2J\x0d\x7f\u009b`, true},
		{"bad\xff", `bad\xff`, true},
		{"priv\ue000 unassigned\U0010fffe", `priv\ue000 unassigned\U0010fffe`, true},
		{"fill\u3164er", `fill\u3164er`, true},
	} {
		got, hidden := textsafe.Escape(tc.in)
		if got != tc.want || hidden != tc.hidden {
			t.Errorf("Escape(%q) = %q, %v; want %q, %v", tc.in, got, hidden, tc.want, tc.hidden)
		}
	}
}

func TestTerminal(t *testing.T) {
	in := "emoji 👨\u200d👩\u200d👧 ❤\ufe0f \u202eevil\x1b]52;c;x\x07"
	want := "emoji 👨\u200d👩\u200d👧 ❤\ufe0f " + `\u202eevil\x1b]52;c;x\x07`
	if got := textsafe.Terminal(in); got != want {
		t.Errorf("Terminal = %q, want %q", got, want)
	}
}

func TestFields(t *testing.T) {
	long := strings.Repeat("x", 5000)
	fs, hidden := textsafe.Fields([]byte(`{"cmd":"X=\u2067 rm","n":12345678901234567890,"opts":{"b":[1,2],"a":"\u202e"},"long":"` + long + `"}`))
	if !hidden {
		t.Error("hidden characters not reported")
	}
	var got []string
	for _, f := range fs {
		got = append(got, f.Name+"="+f.Value)
	}
	want := []string{`cmd=X=\u2067 rm`, "n=12345678901234567890", "opts={\n  \"a\": \"\\u202e\",\n  \"b\": [\n    1,\n    2\n  ]\n}", "long=" + long}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("fields:\n%q\nwant\n%q", got, want)
	}
	if fs, hidden := textsafe.Fields([]byte(`[1, "a"]`)); hidden || len(fs) != 1 || fs[0].Name != "" {
		t.Errorf("not an object: %q %v", fs, hidden)
	}
	if fs, _ := textsafe.Fields([]byte(`{"a":1} trailing`)); len(fs) != 1 || fs[0].Name != "" {
		t.Errorf("trailing data: %q", fs)
	}
}

func ExampleEscape() {
	shown, hidden := textsafe.Escape("X=\u2067\u2066 rm -f important.txt \u2069 # \u2066ls -la\u2069\u2069")
	fmt.Println(shown)
	if hidden {
		fmt.Println(textsafe.Warning)
	}
	// Output:
	// X=\u2067\u2066 rm -f important.txt \u2069 # \u2066ls -la\u2069\u2069
	// contains invisible or direction-changing characters (shown escaped)
}
