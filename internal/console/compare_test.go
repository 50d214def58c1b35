package console_test

import (
	"net/http"
	"testing"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/console"
	"github.com/gorath/rath/session"
)

// Two sessions side by side: the first differing chunk is found, a run
// id stands for its output session, a session equals itself, and bad
// or unknown ids are clear errors.
func TestCompare(t *testing.T) {
	f := newFixture(t, "")
	ctx := t.Context()
	a, err := f.rt.NewUserSession(ctx, "same start")
	if err != nil {
		t.Fatal(err)
	}
	a, _ = a.Append(ctx, session.Chunk{Role: events.RoleAssistant, Content: "same reply"})
	b, err := a.Fork(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, _ = a.Append(ctx, session.Chunk{Role: events.RoleUser, Content: "left <b>"})
	b, _ = b.Append(ctx, session.Chunk{Role: events.RoleUser, Content: "right"})
	b, _ = b.Append(ctx, session.Chunk{Role: events.RoleAssistant, Content: "more"})
	v := decode[console.CompareView](t, f.get(t, "/api/compare?a="+a.ID()+"&b="+b.ID(), ""))
	if v.FirstDifference != 2 || len(v.A.Chunks) != 3 || len(v.B.Chunks) != 4 || v.A.Session.ID != a.ID() {
		t.Fatalf("compare = first %d, %d vs %d chunks", v.FirstDifference, len(v.A.Chunks), len(v.B.Chunks))
	}
	same := decode[console.CompareView](t, f.get(t, "/api/compare?a="+f.run+"&b="+f.run, ""))
	if same.FirstDifference != -1 || len(same.A.Chunks) == 0 {
		t.Fatalf("a run against itself: first %d, %d chunks", same.FirstDifference, len(same.A.Chunks))
	}
	for _, tt := range []struct {
		query string
		code  int
	}{
		{"?a=" + a.ID(), http.StatusBadRequest},
		{"?a=" + a.ID() + "&b=s-nosuch", http.StatusNotFound},
	} {
		if res, body := f.do(t, "GET", "/api/compare"+tt.query, nil); res.StatusCode != tt.code {
			t.Errorf("%s: %s %s, want %d", tt.query, res.Status, body, tt.code)
		}
	}
}
