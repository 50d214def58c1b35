package console

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gorath/rath/events"
)

func chunks(texts ...string) []ChunkView {
	var out []ChunkView
	for i, t := range texts {
		out = append(out, ChunkView{Index: i, Chunk: events.Chunk{Role: events.RoleUser, Content: t}})
	}
	return out
}

// An insertion on one side is one gap; the chunks after it line up again
// (pairing by index would mark every later chunk).
func TestAlign(t *testing.T) {
	show := func(rows []AlignedRow) string {
		var b strings.Builder
		for _, r := range rows {
			mark := "~"
			if r.Same {
				mark = "="
			}
			fmt.Fprintf(&b, "%d%s%d ", r.A, mark, r.B)
		}
		return strings.TrimSpace(b.String())
	}
	for _, c := range []struct {
		name string
		a, b []string
		want string
	}{
		{"equal", []string{"x", "y"}, []string{"x", "y"}, "0=0 1=1"},
		{"insertion", []string{"a", "b", "c", "d"}, []string{"a", "NEW", "b", "c", "d"}, "0=0 -1~1 1=2 2=3 3=4"},
		{"deletion", []string{"a", "b", "c"}, []string{"a", "c"}, "0=0 1~-1 2=1"},
		{"change", []string{"a", "b", "c"}, []string{"a", "B", "c"}, "0=0 1~1 2=2"},
		{"tails", []string{"a", "x"}, []string{"a", "y", "z"}, "0=0 1~1 -1~2"},
		{"empty", nil, []string{"a"}, "-1~0"},
	} {
		if got := show(align(chunks(c.a...), chunks(c.b...))); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
