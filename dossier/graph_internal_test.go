package dossier

import (
	"fmt"
	"strings"
	"testing"
)

// graphOf builds sessions s0..s(n-1) in creation order and edges from a
// "parent>child" list.
func graphOf(n int, spec string) ([]*Session, []graphEdgeIn) {
	ss := make([]*Session, n)
	for i := range ss {
		ss[i] = &Session{ID: fmt.Sprintf("s%d", i), Kind: "fork", InRun: true}
	}
	var es []graphEdgeIn
	for _, pair := range strings.Fields(spec) {
		p, c, _ := strings.Cut(pair, ">")
		es = append(es, graphEdgeIn{From: "s" + p, To: "s" + c, Kind: "fork"})
	}
	return ss, es
}

func layersOf(g Graph) string {
	var out []string
	for _, n := range g.Nodes {
		out = append(out, fmt.Sprintf("%s@%d.%d", n.Session, n.Layer, n.Order))
	}
	return strings.Join(out, " ")
}

func TestLayout_Layers(t *testing.T) {
	tests := []struct {
		name string
		n    int
		spec string
		want string
	}{
		{"single", 1, "", "s0@0.0"},
		{"diamond", 4, "0>1 0>2 1>3 2>3", "s0@0.0 s1@1.0 s2@1.1 s3@2.0"},
		// s3's longest chain is through s2, so it sits below it even though
		// s0 is also its parent.
		{"longest path", 4, "0>1 1>2 2>3 0>3", "s0@0.0 s1@1.0 s2@2.0 s3@3.0"},
		{"two roots", 3, "0>2 1>2", "s0@0.0 s1@0.1 s2@1.0"},
		{"unknown ends are ignored", 2, "0>1 0>9", "s0@0.0 s1@1.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss, es := graphOf(tt.n, tt.spec)
			if got := layersOf(layout(ss, es)); got != tt.want {
				t.Errorf("layers = %s, want %s", got, tt.want)
			}
		})
	}
}

// In creation order the children of two roots interleave, which crosses
// every edge; the barycenter sweeps untangle them.
func TestLayout_BarycenterRemovesCrossings(t *testing.T) {
	ss, es := graphOf(6, "0>2 1>3 0>4 1>5")
	naive := Graph{}
	for i, s := range ss {
		layer := 0
		if i >= 2 {
			layer = 1
		}
		order := i
		if i >= 2 {
			order = i - 2
		}
		naive.Nodes = append(naive.Nodes, GraphNode{Session: s.ID, Layer: layer, Order: order})
	}
	for _, e := range es {
		naive.Edges = append(naive.Edges, GraphEdge{From: e.From, To: e.To})
	}
	if crossings(naive) == 0 {
		t.Fatal("the creation order has no crossing: the test proves nothing")
	}
	g := layout(ss, es)
	if n := crossings(g); n != 0 {
		t.Fatalf("%d crossings after layout: %s", n, layersOf(g))
	}
}

func TestLayout_GeometryDoesNotOverlap(t *testing.T) {
	ss, es := graphOf(7, "0>1 0>2 0>3 1>4 2>4 3>5 4>6 5>6")
	ss[0].Loops = []Loop{{Path: "root.x", Count: 3}}
	g := layout(ss, es)
	for i, a := range g.Nodes {
		if a.X < 0 || a.Y < 0 || a.X+a.W > g.Width || a.Y+a.H > g.Height {
			t.Errorf("node %s at %d,%d outside %dx%d", a.Session, a.X, a.Y, g.Width, g.Height)
		}
		for _, b := range g.Nodes[i+1:] {
			if a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H {
				t.Errorf("nodes %s and %s overlap", a.Session, b.Session)
			}
		}
	}
	if g.Nodes[0].Loop != "↻ root.x ×3" || g.Nodes[0].LoopPath == "" {
		t.Fatalf("loop = %q %q", g.Nodes[0].Loop, g.Nodes[0].LoopPath)
	}
	if len(g.Edges) != len(es) {
		t.Fatalf("%d edges drawn of %d", len(g.Edges), len(es))
	}
}

func TestLoops_OutermostOnly(t *testing.T) {
	got := loops(map[string]int{"root": 1, "root.loop": 3, "root.loop.step0": 3, "root.other": 2})
	if want := "[{root.loop 3} {root.other 2}]"; fmt.Sprint(got) != want {
		t.Fatalf("loops = %v, want %s", got, want)
	}
}

func TestAnchors_UniqueAndSafe(t *testing.T) {
	var a anchors
	got := []string{a.make("session", "s-1"), a.make("session", "s 1"), a.make("session", "s_1"), a.make("session", `"><x`)}
	if want := "[session-s-1 session-s_1 session-s_1-2 session-___x]"; fmt.Sprint(got) != want {
		t.Fatalf("anchors = %v, want %s", got, want)
	}
}
