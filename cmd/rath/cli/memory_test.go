package cli

import (
	"strings"
	"testing"

	"github.com/gorath/rath/memory"
)

func TestMemoryCommands(t *testing.T) {
	dir := t.TempDir()
	a := strings.TrimSpace(mustRun(t, dir, "memory", "add", "user/ana", "prefers short answers", "--meta", "source=chat"))
	mustRun(t, dir, "memory", "add", "user/ana", "works on the billing service in Go")
	mustRun(t, dir, "memory", "add", "user/bob", "prefers long answers")

	hits := decodeJSON[[]memory.Hit](t, mustRun(t, dir, "memory", "recall", "user/ana", "short", "answers", "--json", "-k", "5"))
	if len(hits) == 0 || hits[0].ID != a || hits[0].Meta["source"] != "chat" {
		t.Fatalf("recall = %+v, want %s first", hits, a)
	}
	for _, h := range hits {
		if strings.Contains(h.Text, "long answers") {
			t.Fatal("recall crossed namespaces")
		}
	}
	items := decodeJSON[[]memory.Item](t, mustRun(t, dir, "memory", "list", "user/ana", "--json"))
	if len(items) != 2 {
		t.Fatalf("list = %+v", items)
	}
	mustRun(t, dir, "memory", "forget", "user/ana", a)
	hits = decodeJSON[[]memory.Hit](t, mustRun(t, dir, "memory", "recall", "user/ana", "short answers", "--json"))
	for _, h := range hits {
		if h.ID == a {
			t.Fatal("a forgotten memory was recalled")
		}
	}
	// Forgetting is not erasure: the text stays in the log, and the help says so.
	if out := mustRun(t, dir, "events"); !strings.Contains(out, "prefers short answers") {
		t.Fatalf("the log no longer shows a forgotten memory's text:\n%s", out)
	}
	if help := mustRun(t, dir, "memory", "forget", "--help"); !strings.Contains(help, "not erasure") || !strings.Contains(help, "stays in the event log") {
		t.Fatalf("memory forget --help does not say the text stays in the log:\n%s", help)
	}
	if r := rathCLI(t, dir, "memory", "forget", "user/ana", a); r.code != 1 {
		t.Fatalf("forgetting twice: exit %d", r.code)
	}
	if r := rathCLI(t, dir, "memory", "add", "user/ana", "x", "--meta", "novalue"); r.code != 2 {
		t.Fatalf("bad --meta: exit %d", r.code)
	}
	out := mustRun(t, dir, "rebuild", "--memory")
	if !strings.Contains(out, "memories indexed 2") {
		t.Fatalf("rebuild --memory: %s", out)
	}
	if out := mustRun(t, dir, "memory", "recall", "user/ana", "billing"); !strings.Contains(out, "billing service") {
		t.Fatalf("recall after rebuild: %s", out)
	}
}
