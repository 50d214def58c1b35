package jsonview

import (
	"context"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/checkpoint"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/projections"
)

// StatusWord is how a run's status is shown: the log records a finished
// run as ok or error, an operator reads done or failed
// (projections.StatusWord).
func StatusWord(status string) string { return projections.StatusWord(status) }

// StatusStored maps a status word back to the stored status.
func StatusStored(word string) string {
	switch word {
	case "done":
		return rath.RunOK
	case "failed":
		return rath.RunError
	}
	return word
}

// Run is a run as `rath runs --json` prints it.
type Run struct {
	ID       string `json:"id"`
	Workflow string `json:"workflow"`
	Status   string `json:"status"`
	Input    string `json:"input_session,omitempty"`
	Output   string `json:"output_session,omitempty"`
	Parent   string `json:"parent_run,omitempty"`
	Started  string `json:"started_at"`
	FirstSeq int64  `json:"started_seq"`
	LastSeq  int64  `json:"finished_seq,omitempty"`
	Error    string `json:"error,omitempty"`
	// Worker holds (or last held) the run's lease on the worker fleet.
	Worker string `json:"worker,omitempty"`
}

// RunOf is r's view; worker is the lease holder, if any.
func RunOf(r projections.RunRow, worker string) Run {
	return Run{ID: r.ID, Workflow: r.Workflow, Status: StatusWord(r.Status), Input: r.InputSession, Output: r.OutputSession,
		Parent: r.ParentRun, Started: time.Unix(0, r.StartedAt).UTC().Format(time.RFC3339), FirstSeq: r.StartedSeq,
		LastSeq: r.FinishedSeq.Int64, Error: r.Error, Worker: worker}
}

// Session is a session's metadata as `rath show --json` prints it.
type Session struct {
	ID         string       `json:"id"`
	Kind       string       `json:"kind"`
	Origin     string       `json:"origin,omitempty"`
	Chunks     int64        `json:"chunks"`
	Version    int64        `json:"version"`
	Backend    string       `json:"backend,omitempty"`
	Spec       string       `json:"spec,omitempty"`
	Parents    []string     `json:"parents"`
	Source     string       `json:"source,omitempty"`
	Usage      events.Usage `json:"usage"`
	Incomplete bool         `json:"incomplete,omitempty"`
	CreatedSeq int64        `json:"created_seq"`
	UpdatedSeq int64        `json:"updated_seq"`
}

// SessionOf is r's view with its lineage parents.
func SessionOf(r projections.SessionRow, parents []string) Session {
	if parents == nil {
		parents = []string{}
	}
	return Session{
		ID: r.ID, Kind: r.Kind, Origin: r.Origin, Chunks: r.Length, Version: r.Version,
		Backend: r.Backend, Spec: r.Spec, Parents: parents, Source: r.Source.String,
		Usage: r.Usage(), Incomplete: r.Incomplete, CreatedSeq: r.CreatedSeq, UpdatedSeq: r.UpdatedSeq,
	}
}

// Verify is a verification as `rath verify --json` prints it.
type Verify struct {
	OK     bool   `json:"ok"`
	Events int64  `json:"events"`
	Blobs  int64  `json:"blobs"`
	Head   string `json:"head,omitempty"`
	// Tree is the Merkle tree head as SIZE:ROOT (root in base64).
	Tree string `json:"tree,omitempty"`
	// FailedSeq is the first bad seq (0 if the failure is a blob or none).
	FailedSeq  int64  `json:"failed_seq,omitempty"`
	FailedBlob string `json:"failed_blob,omitempty"`
	// FailedTable is the projection table whose row differs from a
	// rebuild of the log.
	FailedTable string `json:"failed_table,omitempty"`
	Failure     string `json:"failure,omitempty"`
	// Projections is the comparison with a rebuild, absent when the chain
	// failed first.
	Projections *projections.CheckReport `json:"projections,omitempty"`
	// Attested says in one line what the store's signed checkpoints
	// attest ("attested: …", or "locally consistent, not attested");
	// Attestation is the detail. Absent when the log failed first.
	Attested    string             `json:"attested,omitempty"`
	Attestation *checkpoint.Report `json:"attestation,omitempty"`
	// Redactions are the redacted events, each with the evidence.redacted
	// event that redacted it (by whom, why).
	Redactions []eventlog.RedactionInfo `json:"redactions,omitempty"`
	// Erasures are the subjects whose keys were destroyed, each with the
	// evidence.erased event that records it.
	Erasures []rath.ErasureInfo `json:"erasures,omitempty"`
}

// VerifyOf is rep's view.
func VerifyOf(rep *rath.VerifyReport) Verify {
	v := Verify{OK: rep.OK(), Events: rep.Events, Blobs: rep.Blobs, Projections: rep.Projections, Redactions: rep.Redactions, Erasures: rep.Erasures}
	if rep.OK() && rep.Head.Seq > 0 {
		v.Head = rep.Head.String()
		v.Tree = rep.Tree.String()
	}
	if f := rep.Failure; f != nil {
		v.FailedSeq, v.FailedBlob, v.Failure = f.Seq, f.Blob, f.Reason
	}
	if p := rep.Projections; p != nil && !p.OK() {
		v.FailedTable = p.Differences[0].Table
	}
	if a := rep.Attestation; a != nil {
		v.Attested, v.Attestation = a.Summary(), a
	}
	return v
}

// GraphNode is a session in `rath graph --format json`.
type GraphNode struct {
	ID         string `json:"id"`
	Kind       string `json:"kind"`
	Origin     string `json:"origin,omitempty"`
	Chunks     int64  `json:"chunks"`
	Incomplete bool   `json:"incomplete,omitempty"`
	// InRun is set, in the console's graph of a run, for the sessions the
	// run wrote; the others are their lineage parents and its input.
	InRun bool `json:"in_run,omitempty"`
}

// GraphEdge is a lineage edge from parent to child.
type GraphEdge struct {
	Parent   string `json:"parent"`
	Child    string `json:"child"`
	Kind     string `json:"kind"`
	Position int    `json:"position"`
}

// Graph is the session graph.
type Graph struct {
	Nodes []GraphNode `json:"nodes"`
	Edges []GraphEdge `json:"edges"`
}

// EdgeOf is e's view.
func EdgeOf(e projections.Edge) GraphEdge {
	return GraphEdge{Parent: e.Parent, Child: e.Child, Kind: e.Kind, Position: e.Position}
}

// LoadGraph reads the whole session graph.
func LoadGraph(ctx context.Context, r *projections.Reader) (Graph, error) {
	rows, err := r.Sessions(ctx)
	if err != nil {
		return Graph{}, err
	}
	edges, err := r.Edges(ctx)
	if err != nil {
		return Graph{}, err
	}
	g := Graph{Nodes: make([]GraphNode, len(rows)), Edges: make([]GraphEdge, len(edges))}
	for i, row := range rows {
		g.Nodes[i] = GraphNode{ID: row.ID, Kind: row.Kind, Origin: row.Origin, Chunks: row.Length, Incomplete: row.Incomplete}
	}
	for i, e := range edges {
		g.Edges[i] = EdgeOf(e)
	}
	return g, nil
}
