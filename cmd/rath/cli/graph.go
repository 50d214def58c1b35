package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/gorath/rath/internal/jsonview"
	"github.com/gorath/rath/projections"
	"github.com/spf13/cobra"
)

type (
	graphNode = jsonview.GraphNode
	graphView = jsonview.Graph
)

// nodeLabel is a node's kind, origin and completeness, for Mermaid and DOT.
func nodeLabel(n graphNode) string {
	l := n.Kind
	if n.Origin != "" {
		l += " (" + n.Origin + ")"
	}
	if n.Incomplete {
		l += ", incomplete"
	}
	return l
}

func newGraphCmd(a *app) *cobra.Command {
	var format, run string
	cmd := &cobra.Command{
		Use:   "graph",
		Short: "Print the session graph as Mermaid, Graphviz dot or JSON",
		Long: `graph prints every session as a node labelled with its kind and origin,
and every lineage edge (fork, merge, import kinds) from parent to child.
Detached sessions appear as nodes without edges: they have no lineage
parent, though the log keeps where they came from. --run keeps one run's
sessions (its input and those it created) and the edges between them.`,
		Example: "rath graph --format dot | dot -Tsvg > graph.svg\nrath graph --run run-1a2b",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.json {
				format = "json"
			}
			switch format {
			case "mermaid", "dot", "json":
			default:
				return usagef(cmd, "--format %q: want mermaid, dot or json", format)
			}
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			v, err := loadGraph(ctx, rt.Reader())
			if err != nil {
				return err
			}
			if run != "" {
				set, err := runSessions(ctx, rt, run)
				if err != nil {
					return err
				}
				v = graphOfRun(v, set)
			}
			switch format {
			case "json":
				return a.printJSON(v)
			case "dot":
				writeDot(a.stdout, v)
			default:
				writeMermaid(a.stdout, v)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "mermaid", "output format: mermaid, dot or json")
	cmd.Flags().StringVar(&run, "run", "", "only this run's sessions and the edges between them")
	jsonFlag(cmd, a)
	return cmd
}

func loadGraph(ctx context.Context, r *projections.Reader) (graphView, error) {
	return jsonview.LoadGraph(ctx, r)
}

// writeMermaid names nodes n0, n1, ... so that session ids never need
// escaping as Mermaid identifiers; ids appear in the quoted labels.
func writeMermaid(w io.Writer, v graphView) {
	fmt.Fprintln(w, "graph TD")
	key := map[string]string{}
	for i, n := range v.Nodes {
		key[n.ID] = fmt.Sprintf("n%d", i)
		fmt.Fprintf(w, "  %s[\"%s<br/>%s\"]\n", key[n.ID], mermaidText(n.ID), mermaidText(nodeLabel(n)))
	}
	for _, e := range v.Edges {
		fmt.Fprintf(w, "  %s -->|%s| %s\n", key[e.Parent], mermaidText(e.Kind), key[e.Child])
	}
}

// mermaidText escapes characters that end a Mermaid label.
func mermaidText(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "|", "#124;", "<", "#lt;", ">", "#gt;", "\n", " ").Replace(s)
}

func writeDot(w io.Writer, v graphView) {
	fmt.Fprintln(w, "digraph rath {")
	fmt.Fprintln(w, "  node [shape=box];")
	for _, n := range v.Nodes {
		fmt.Fprintf(w, "  %s [label=%s];\n", dotString(n.ID), dotString(n.ID+"\n"+nodeLabel(n)))
	}
	for _, e := range v.Edges {
		fmt.Fprintf(w, "  %s -> %s [label=%s];\n", dotString(e.Parent), dotString(e.Child), dotString(e.Kind))
	}
	fmt.Fprintln(w, "}")
}

// dotString quotes s as a DOT string; newlines become DOT's \n.
func dotString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", "").Replace(s) + `"`
}
