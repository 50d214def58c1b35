package dossier

import (
	"fmt"
	"sort"
	"strings"
)

// Graph geometry, in SVG user units (pixels at 100%).
const (
	nodeW    = 236
	nodeH    = 92
	gapX     = 44
	gapY     = 76
	margin   = 24
	loopRoom = 28 // right of the widest layer, for a self-loop arc
	// sweeps is the number of down-and-up barycenter passes.
	sweeps = 4
)

// Graph is the session graph laid out for drawing.
type Graph struct {
	Width  int         `json:"width"`
	Height int         `json:"height"`
	Nodes  []GraphNode `json:"nodes"`
	Edges  []GraphEdge `json:"edges"`
}

// GraphNode is a session placed in a layer.
type GraphNode struct {
	Session string `json:"session"`
	Anchor  string `json:"anchor"`
	Kind    string `json:"kind"`
	Author  string `json:"author,omitempty"`
	Context bool   `json:"context,omitempty"` // a parent the run did not touch
	Layer   int    `json:"layer"`
	Order   int    `json:"order"`
	X       int    `json:"x"`
	Y       int    `json:"y"`
	W       int    `json:"w"`
	H       int    `json:"h"`
	// Lines are the label's lines, Loop the self-loop label ("" if none).
	Lines []string `json:"lines"`
	Loop  string   `json:"loop,omitempty"`
	// LoopPath is the SVG path of the self-loop arc.
	LoopPath string `json:"-"`
}

// GraphEdge is an edge from a parent to a child session.
type GraphEdge struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Kind   string `json:"kind"`
	Label  string `json:"label"`
	Dashed bool   `json:"dashed,omitempty"`
	Path   string `json:"-"` // SVG path data
	LX     int    `json:"-"` // label center
	LY     int    `json:"-"`
	RX     int    `json:"-"` // label box corner and width
	RY     int    `json:"-"`
	LW     int    `json:"-"`
}

// layout places sessions in layers by longest path from the roots of the
// drawn graph (every parent above its children), orders each layer with
// barycenter sweeps, and computes coordinates. sessions must be in
// creation order, which is a topological order of lineage.
func layout(sessions []*Session, edges []graphEdgeIn) Graph {
	n := len(sessions)
	index := make(map[string]int, n)
	for i, s := range sessions {
		index[s.ID] = i
	}
	ups := make([][]int, n)   // parents, per node
	downs := make([][]int, n) // children, per node
	var es []graphEdgeIn
	for _, e := range edges {
		p, okP := index[e.From]
		c, okC := index[e.To]
		if !okP || !okC || p == c {
			continue
		}
		ups[c] = append(ups[c], p)
		downs[p] = append(downs[p], c)
		es = append(es, e)
	}
	layer := longestPath(n, ups)
	layers := orderLayers(layer, ups, downs)
	g := Graph{}
	widest := 0
	for _, l := range layers {
		widest = max(widest, len(l))
	}
	g.Width = 2*margin + widest*nodeW + max(widest-1, 0)*gapX + loopRoom
	g.Height = 2*margin + len(layers)*nodeH + max(len(layers)-1, 0)*gapY
	g.Nodes = make([]GraphNode, n)
	for li, l := range layers {
		lw := len(l)*nodeW + (len(l)-1)*gapX
		x0 := margin + (widest*nodeW+(widest-1)*gapX-lw)/2
		for oi, v := range l {
			s := sessions[v]
			node := GraphNode{Session: s.ID, Anchor: s.Anchor, Kind: s.Kind, Author: s.Author, Context: !s.InRun,
				Layer: li, Order: oi, X: x0 + oi*(nodeW+gapX), Y: margin + li*(nodeH+gapY), W: nodeW, H: nodeH}
			node.Lines = nodeLines(s)
			if len(s.Loops) > 0 {
				parts := make([]string, len(s.Loops))
				for i, lp := range s.Loops {
					parts[i] = fmt.Sprintf("%s ×%d", lp.Path, lp.Count)
				}
				node.Loop = "↻ " + strings.Join(parts, ", ")
				rx, top, bot := node.X+node.W, node.Y+node.H/4, node.Y+3*node.H/4
				node.LoopPath = fmt.Sprintf("M %d %d C %d %d, %d %d, %d %d", rx, top, rx+loopRoom, top-6, rx+loopRoom, bot+6, rx, bot)
			}
			g.Nodes[v] = node
		}
	}
	g.Edges = routeEdges(g.Nodes, es, index)
	// Nodes are listed layer by layer, left to right, for the SVG and for
	// readers of the JSON.
	sort.SliceStable(g.Nodes, func(i, j int) bool {
		if g.Nodes[i].Layer != g.Nodes[j].Layer {
			return g.Nodes[i].Layer < g.Nodes[j].Layer
		}
		return g.Nodes[i].Order < g.Nodes[j].Order
	})
	return g
}

// longestPath assigns each node the length of the longest parent chain
// above it. Nodes come in a topological order (parents first), so one
// pass suffices; a parent listed later (which a consistent log never
// produces) is treated as a root rather than looping.
func longestPath(n int, ups [][]int) []int {
	layer := make([]int, n)
	for v := range n {
		for _, p := range ups[v] {
			if p < v {
				layer[v] = max(layer[v], layer[p]+1)
			}
		}
	}
	return layer
}

// orderLayers groups nodes by layer (creation order first) and reorders
// each layer by the barycenter of its neighbours' positions in the
// adjacent pass direction, keeping ties in their current order.
func orderLayers(layer []int, ups, downs [][]int) [][]int {
	depth := 0
	for _, l := range layer {
		depth = max(depth, l+1)
	}
	layers := make([][]int, depth)
	for v, l := range layer {
		layers[l] = append(layers[l], v)
	}
	pos := make([]float64, len(layer)) // position within its layer, scaled to [0,1]
	place := func(l []int) {
		for i, v := range l {
			pos[v] = (float64(i) + 0.5) / float64(len(l))
		}
	}
	for _, l := range layers {
		place(l)
	}
	reorder := func(l []int, nbrs [][]int) {
		bary := make(map[int]float64, len(l))
		for _, v := range l {
			if len(nbrs[v]) == 0 {
				bary[v] = pos[v]
				continue
			}
			sum := 0.0
			for _, u := range nbrs[v] {
				sum += pos[u]
			}
			bary[v] = sum / float64(len(nbrs[v]))
		}
		sort.SliceStable(l, func(i, j int) bool { return bary[l[i]] < bary[l[j]] })
		place(l)
	}
	for range sweeps {
		for i := 1; i < depth; i++ {
			reorder(layers[i], ups)
		}
		for i := depth - 2; i >= 0; i-- {
			reorder(layers[i], downs)
		}
	}
	return layers
}

// crossings counts edge crossings between adjacent layers, for tests.
func crossings(g Graph) int {
	at := map[string]GraphNode{}
	for _, n := range g.Nodes {
		at[n.Session] = n
	}
	type seg struct{ l, a, b int }
	var segs []seg
	for _, e := range g.Edges {
		p, c := at[e.From], at[e.To]
		if c.Layer == p.Layer+1 {
			segs = append(segs, seg{p.Layer, p.Order, c.Order})
		}
	}
	n := 0
	for i := range segs {
		for j := i + 1; j < len(segs); j++ {
			s, t := segs[i], segs[j]
			if s.l == t.l && (s.a-t.a)*(s.b-t.b) < 0 {
				n++
			}
		}
	}
	return n
}

// routeEdges draws each edge as a cubic curve from the bottom of the
// parent to the top of the child, spreading the ends of a node's several
// edges along its side so a merge's inputs stay apart.
func routeEdges(nodes []GraphNode, es []graphEdgeIn, index map[string]int) []GraphEdge {
	outs := map[string][]int{}
	ins := map[string][]int{}
	for i, e := range es {
		outs[e.From] = append(outs[e.From], i)
		ins[e.To] = append(ins[e.To], i)
	}
	// Spread in the order of the other end's x, so spread ends do not cross.
	for k, l := range outs {
		sort.SliceStable(l, func(a, b int) bool { return nodes[index[es[l[a]].To]].X < nodes[index[es[l[b]].To]].X })
		outs[k] = l
	}
	for k, l := range ins {
		sort.SliceStable(l, func(a, b int) bool { return nodes[index[es[l[a]].From]].X < nodes[index[es[l[b]].From]].X })
		ins[k] = l
	}
	slot := func(l []int, i int) (int, int) {
		for k, v := range l {
			if v == i {
				return k, len(l)
			}
		}
		return 0, 1
	}
	out := make([]GraphEdge, len(es))
	for i, e := range es {
		p, c := nodes[index[e.From]], nodes[index[e.To]]
		ko, no := slot(outs[e.From], i)
		ki, ni := slot(ins[e.To], i)
		x1 := p.X + p.W*(ko+1)/(no+1)
		y1 := p.Y + p.H
		x2 := c.X + c.W*(ki+1)/(ni+1)
		y2 := c.Y - 2 // leave room for the arrow head
		dy := max((y2-y1)/2, 20)
		label := e.Kind
		if e.Kind == "merge" {
			label = fmt.Sprintf("merge #%d", e.Position)
		}
		lw := 7*len([]rune(label)) + 10
		lx, ly := (x1+x2)/2, (y1+y2)/2
		out[i] = GraphEdge{From: e.From, To: e.To, Kind: e.Kind, Label: label, Dashed: e.Dashed,
			Path: fmt.Sprintf("M %d %d C %d %d, %d %d, %d %d", x1, y1, x1, y1+dy, x2, y2-dy, x2, y2),
			LX:   lx, LY: ly, RX: lx - lw/2, RY: ly - 8, LW: lw}
	}
	return out
}

// nodeLines is a node's label: the id, kind and author, size.
func nodeLines(s *Session) []string {
	kind := s.Kind
	if s.Origin != "" && s.Kind == "root" {
		kind += " (" + s.Origin + ")"
	}
	if !s.InRun {
		kind += ", context"
	}
	stats := fmt.Sprintf("%d chunks · %d tokens", len(s.Chunks), s.Usage.TotalTokens)
	if !s.InRun {
		stats = fmt.Sprintf("%d tokens", s.Usage.TotalTokens)
	}
	return []string{s.ID, oneLine(kind, 32), oneLine(s.Author, 32), stats}
}
