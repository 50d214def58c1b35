package cli

import (
	"strings"
	"testing"

	"github.com/gorath/rath/replay"
)

func TestTermSafe(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text, é 日本\n\tindented", "plain text, é 日本\n\tindented"},
		{"\x1b]52;c;aGk=\x07", `\x1b]52;c;aGk=\x07`},
		{"\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},
		{"a\rb\x00c\x7f", `a\x0db\x00c\x7f`},
		{"csi \u009b2J", `csi \u009b2J`},
		{"bad \xff\xfe byte", `bad \xff\xfe byte`},
		{"replacement \ufffd kept", "replacement \ufffd kept"},
	} {
		if got := termSafe(tc.in); got != tc.want {
			t.Errorf("termSafe(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A character split across writes (streamed deltas) is not mistaken for
// bad bytes, and a C1 control split the same way is still escaped.
func TestTermWriter_SplitSequences(t *testing.T) {
	var b strings.Builder
	w := &termWriter{w: &b}
	for _, part := range []string{"日"[:1], "日"[1:], "\xc2", "\x9b", "2J \x1b", "[H", "\xe6"} {
		if _, err := w.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), `日\u009b2J \x1b[H\xe6`; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// A divergence quotes model text: printed escaped.
func TestPrintReport_Escaped(t *testing.T) {
	var out strings.Builder
	a := &app{stdout: &out}
	rep := &replay.Report{Run: "run-1", Recorded: 2, Divergence: &replay.Divergence{Class: replay.ClassMismatch, Seq: 2,
		Hint: "prompt changed: \x1b]52;c;aGk=\x07", Diff: "content:\n- a\n+ \x1b[2J\u009b"}}
	if err := printReport(a, rep); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(out.String(), "\x1b\x07\u009b") {
		t.Fatalf("control characters printed: %q", out.String())
	}
}
