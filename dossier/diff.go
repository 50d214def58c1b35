package dossier

import (
	"fmt"
	"strings"
)

// No diff library is in go.mod (go-cmp's diff is internal), so this is a
// small line diff: common prefix and suffix trimmed, then Myers' greedy
// O((N+M)·D) algorithm on the middle, with the D×D trace kept for the
// backtrack. Past maxEdits edits the middle is shown as replaced whole,
// which bounds time and memory on unrelated large files.
const (
	maxEdits    = 2000
	diffContext = 3
)

// Diff line kinds.
const (
	LineHunk    = "hunk"
	LineContext = "ctx"
	LineAdd     = "add"
	LineDel     = "del"
	LineNote    = "note" // "\ No newline at end of file"
)

// DiffLine is one line of a unified diff, without its prefix character.
type DiffLine struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// Prefix returns the unified-diff prefix of the line's kind.
func (l DiffLine) Prefix() string {
	switch l.Kind {
	case LineAdd:
		return "+"
	case LineDel:
		return "-"
	case LineContext:
		return " "
	case LineNote:
		return `\`
	}
	return ""
}

type opKind byte

const (
	opEqual opKind = iota
	opDel
	opAdd
)

type op struct {
	kind opKind
	a, b int // line indexes in old and new (the one that applies)
}

// splitLines splits text into lines that keep their "\n", so a missing
// final newline is a difference like any other.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// diffLines returns the edit script turning a into b.
func diffLines(a, b []string) []op {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := make([]op, 0, len(a)+len(b))
	for i := range pre {
		ops = append(ops, op{opEqual, i, i})
	}
	for _, o := range myers(a[pre:len(a)-suf], b[pre:len(b)-suf]) {
		o.a += pre
		o.b += pre
		ops = append(ops, o)
	}
	for i := range suf {
		ops = append(ops, op{opEqual, len(a) - suf + i, len(b) - suf + i})
	}
	return ops
}

func myers(a, b []string) []op {
	n, m := len(a), len(b)
	if n == 0 && m == 0 {
		return nil
	}
	replaceAll := func() []op {
		ops := make([]op, 0, n+m)
		for i := range n {
			ops = append(ops, op{opDel, i, 0})
		}
		for j := range m {
			ops = append(ops, op{opAdd, n, j})
		}
		return ops
	}
	limit := min(n+m, maxEdits)
	off := limit + 1
	v := make([]int, 2*off+1)
	// trace[d] holds v[-d..d] after step d.
	var trace [][]int
	done := -1
	for d := 0; d <= limit && done < 0; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1] // down: an insertion
			} else {
				x = v[off+k-1] + 1 // right: a deletion
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				done = d
			}
		}
		trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
	}
	if done < 0 {
		return replaceAll()
	}
	var rev []op
	x, y := n, m
	for d := done; d > 0; d-- {
		prev := trace[d-1]
		at := func(k int) int { return prev[k+d-1] }
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - pk
		mx := px + 1 // after the single move
		if pk == k+1 {
			mx = px
		}
		for x > mx {
			x--
			y--
			rev = append(rev, op{opEqual, x, y})
		}
		if pk == k+1 {
			rev = append(rev, op{opAdd, px, py})
		} else {
			rev = append(rev, op{opDel, px, py})
		}
		x, y = px, py
	}
	for x > 0 {
		x--
		y--
		rev = append(rev, op{opEqual, x, y})
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// unified returns the hunks of a unified diff of a and b with ctx lines
// of context, and the counts of added and removed lines.
func unified(before, after string, ctx int) (lines []DiffLine, added, removed int) {
	a, b := splitLines(before), splitLines(after)
	ops := diffLines(a, b)
	// Positions of each op in old and new, for hunk headers.
	type pos struct{ ai, bi int }
	at := make([]pos, len(ops))
	ai, bi := 0, 0
	for i, o := range ops {
		at[i] = pos{ai, bi}
		switch o.kind {
		case opEqual:
			ai++
			bi++
		case opDel:
			ai++
			removed++
		case opAdd:
			bi++
			added++
		}
	}
	emit := func(kind, text string) {
		noNL := !strings.HasSuffix(text, "\n")
		lines = append(lines, DiffLine{Kind: kind, Text: strings.TrimSuffix(text, "\n")})
		if noNL {
			lines = append(lines, DiffLine{Kind: LineNote, Text: " No newline at end of file"})
		}
	}
	for i := 0; i < len(ops); {
		if ops[i].kind == opEqual {
			i++
			continue
		}
		// A hunk: from ctx lines before this change to ctx lines after the
		// last change closer than 2·ctx equal lines to the previous one.
		start := max(0, i-ctx)
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != opEqual {
				end = j
				continue
			}
			if j-end > 2*ctx {
				break
			}
		}
		stop := min(len(ops), end+ctx+1)
		var na, nb int
		for _, o := range ops[start:stop] {
			if o.kind != opAdd {
				na++
			}
			if o.kind != opDel {
				nb++
			}
		}
		sa, sb := at[start].ai+1, at[start].bi+1
		if na == 0 {
			sa--
		}
		if nb == 0 {
			sb--
		}
		lines = append(lines, DiffLine{Kind: LineHunk, Text: fmt.Sprintf("@@ -%d,%d +%d,%d @@", sa, na, sb, nb)})
		for _, o := range ops[start:stop] {
			switch o.kind {
			case opEqual:
				emit(LineContext, a[o.a])
			case opDel:
				emit(LineDel, a[o.a])
			case opAdd:
				emit(LineAdd, b[o.b])
			}
		}
		i = stop
	}
	return lines, added, removed
}

// Unified renders the diff as unified-diff text with ---/+++ headers.
func (f FileDiff) Unified() string {
	var sb strings.Builder
	from, to := "a/"+f.Path, "b/"+f.Path
	if f.Status == FileCreated {
		from = "/dev/null"
	}
	if f.Status == FileDeleted {
		to = "/dev/null"
	}
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", from, to)
	for _, l := range f.Lines {
		sb.WriteString(l.Prefix())
		sb.WriteString(l.Text)
		sb.WriteByte('\n')
	}
	return sb.String()
}
