package dossier

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

var unifiedTests = []struct {
	name, before, after, want string
}{
	{"identical", "a\nb\n", "a\nb\n", ""},
	{"created", "", "x\ny\n", "@@ -0,0 +1,2 @@\n+x\n+y\n"},
	{"deleted", "x\ny\n", "", "@@ -1,2 +0,0 @@\n-x\n-y\n"},
	{"changed line", "a\nb\nc\n", "a\nB\nc\n", "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
	{"no final newline", "a\nb", "a\nb\n", "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"},
	{"context is three lines", "1\n2\n3\n4\n5\n6\n7\n8\n", "1\n2\n3\n4\nX\n6\n7\n8\n",
		"@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+X\n 6\n 7\n 8\n"},
	{"distant changes make two hunks", "a\n1\n2\n3\n4\n5\n6\n7\nb\n", "A\n1\n2\n3\n4\n5\n6\n7\nB\n",
		"@@ -1,4 +1,4 @@\n-a\n+A\n 1\n 2\n 3\n@@ -6,4 +6,4 @@\n 5\n 6\n 7\n-b\n+B\n"},
	{"close changes share a hunk", "a\n1\n2\n3\n4\n5\n6\nb\n", "A\n1\n2\n3\n4\n5\n6\nB\n",
		"@@ -1,8 +1,8 @@\n-a\n+A\n 1\n 2\n 3\n 4\n 5\n 6\n-b\n+B\n"},
	{"insertion at the start", "b\nc\n", "a\nb\nc\n", "@@ -1,2 +1,3 @@\n+a\n b\n c\n"},
}

func render(lines []DiffLine) string {
	var sb strings.Builder
	for _, l := range lines {
		sb.WriteString(l.Prefix() + l.Text + "\n")
	}
	return sb.String()
}

func TestUnified(t *testing.T) {
	for _, tt := range unifiedTests {
		t.Run(tt.name, func(t *testing.T) {
			lines, _, _ := unified(tt.before, tt.after, diffContext)
			if got := render(lines); got != tt.want {
				t.Errorf("diff =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// apply replays an edit script on a, checking that it consumes a and b
// in order; it returns the text the script produces.
func apply(t *testing.T, a, b []string, ops []op) []string {
	t.Helper()
	var out []string
	ai, bi := 0, 0
	for _, o := range ops {
		switch o.kind {
		case opEqual:
			if o.a != ai || o.b != bi || a[o.a] != b[o.b] {
				t.Fatalf("equal op %+v at a=%d b=%d", o, ai, bi)
			}
			out = append(out, a[ai])
			ai++
			bi++
		case opDel:
			if o.a != ai {
				t.Fatalf("delete op %+v at a=%d", o, ai)
			}
			ai++
		case opAdd:
			if o.b != bi {
				t.Fatalf("add op %+v at b=%d", o, bi)
			}
			out = append(out, b[bi])
			bi++
		}
	}
	if ai != len(a) || bi != len(b) {
		t.Fatalf("script stops at a=%d/%d b=%d/%d", ai, len(a), bi, len(b))
	}
	return out
}

// lcs is the textbook dynamic program, to check that Myers finds a
// shortest script.
func lcs(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

func TestDiffLines_RandomInputsGiveMinimalScripts(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"a\n", "b\n", "c\n", "d\n"}
	gen := func() []string {
		out := make([]string, r.IntN(14))
		for i := range out {
			out[i] = words[r.IntN(len(words))]
		}
		return out
	}
	for i := range 500 {
		a, b := gen(), gen()
		ops := diffLines(a, b)
		got := apply(t, a, b, ops)
		if fmt.Sprint(got) != fmt.Sprint(b) {
			t.Fatalf("case %d: script gives %q, want %q", i, got, b)
		}
		equal := 0
		for _, o := range ops {
			if o.kind == opEqual {
				equal++
			}
		}
		if want := lcs(a, b); equal != want {
			t.Fatalf("case %d: %d equal lines, the longest common subsequence has %d (a=%q b=%q)", i, equal, want, a, b)
		}
	}
}

func TestDiffLines_BeyondMaxEditsReplacesWhole(t *testing.T) {
	n := maxEdits + 10
	a, b := make([]string, n), make([]string, n)
	for i := range n {
		a[i], b[i] = fmt.Sprintf("a%d\n", i), fmt.Sprintf("b%d\n", i)
	}
	ops := diffLines(a, b)
	apply(t, a, b, ops)
	if len(ops) != 2*n {
		t.Fatalf("%d ops, want %d deletions and insertions", len(ops), 2*n)
	}
}

func BenchmarkUnified(b *testing.B) {
	var before, after strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&before, "line %d\n", i)
		if i%100 == 0 {
			fmt.Fprintf(&after, "changed %d\n", i)
			continue
		}
		fmt.Fprintf(&after, "line %d\n", i)
	}
	for b.Loop() {
		unified(before.String(), after.String(), diffContext)
	}
}
