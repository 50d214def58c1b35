package dossier

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/gorath/rath/replay"
)

// JSONLFormat names the JSONL layout in its header line; it changes when
// a field changes meaning.
const JSONLFormat = "rath-dossier/1"

// jsonlHeader is the first line.
type jsonlHeader struct {
	Kind     string         `json:"kind"` // "dossier"
	Format   string         `json:"format"`
	Run      Run            `json:"run"`
	Chain    Chain          `json:"chain"`
	Replay   *replay.Report `json:"replay"`
	Sessions []jsonlSession `json:"sessions"`
	Edges    []jsonlEdge    `json:"edges"`
	Counts   map[string]int `json:"counts"`
	// Approvals are the run's requests with their decisions, which are
	// not among the run's own events (they came from outside).
	Approvals []Approval `json:"approvals,omitempty"`
	// Scores are the experiments' scores of the run.
	Scores   []Score  `json:"scores,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

type jsonlSession struct {
	ID      string   `json:"id"`
	Kind    string   `json:"kind"`
	Origin  string   `json:"origin,omitempty"`
	Author  string   `json:"author,omitempty"`
	Parents []string `json:"parents,omitempty"`
	InRun   bool     `json:"in_run"`
	Chunks  int      `json:"chunks"`
	Loops   []Loop   `json:"loops,omitempty"`
}

type jsonlEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
	Kind string `json:"kind"`
}

// jsonlEvent is one event line.
type jsonlEvent struct {
	Kind        string               `json:"kind"` // "event"
	Seq         int64                `json:"seq"`
	Stream      string               `json:"stream"`
	Version     int64                `json:"version"`
	Type        string               `json:"type"`
	TypeVersion int                  `json:"type_version"`
	RunID       string               `json:"run_id,omitempty"`
	At          time.Time            `json:"at"`
	Hash        string               `json:"hash"`
	Payload     json.RawMessage      `json:"payload"`
	Blobs       map[string]jsonlBlob `json:"blobs,omitempty"`
}

// jsonlBlob is a referenced blob: inline as text or base64 when small,
// else only its size.
type jsonlBlob struct {
	Size    int    `json:"size"`
	Text    string `json:"text,omitempty"`
	Base64  string `json:"base64,omitempty"`
	Omitted string `json:"omitted,omitempty"` // why the content is not inline
}

// JSONL writes one JSON object per line: a header (kind "dossier": the
// run, chain evidence, replay verdict, the graph's sessions and edges,
// counts), then every event of the run in seq order (kind "event") with
// the blobs it references inline when they are at most InlineBlobLimit
// bytes. A provider event also carries the message segment its request
// added, so following "prev" through earlier lines rebuilds any request.
func (d *Dossier) JSONL(w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	h := jsonlHeader{Kind: "dossier", Format: JSONLFormat, Run: d.Run, Chain: d.Chain, Replay: d.Replay, Warnings: d.Warnings, Approvals: d.Approvals, Scores: d.Scores,
		Counts: map[string]int{"events": len(d.Events), "sessions": len(d.Sessions), "tool_calls": len(d.Tools),
			"provider_calls": len(d.Providers), "memory": len(d.Memory), "decisions": len(d.Decisions), "workflows": len(d.Workflows),
			"approvals": len(d.Approvals), "scores": len(d.Scores)}}
	for _, s := range d.Sessions {
		h.Sessions = append(h.Sessions, jsonlSession{ID: s.ID, Kind: s.Kind, Origin: s.Origin, Author: s.Author, Parents: s.Parents,
			InRun: s.InRun, Chunks: len(s.Chunks), Loops: s.Loops})
	}
	for _, e := range d.Graph.Edges {
		h.Edges = append(h.Edges, jsonlEdge{From: e.From, To: e.To, Kind: e.Kind})
	}
	if err := enc.Encode(h); err != nil {
		return fmt.Errorf("dossier: jsonl: %w", err)
	}
	limit := d.opts.inlineBlobLimit()
	for _, ev := range d.Events {
		line := jsonlEvent{Kind: "event", Seq: ev.Seq, Stream: ev.Stream, Version: ev.Version, Type: ev.Type,
			TypeVersion: ev.TypeVersion, RunID: ev.RunID, At: ev.At, Hash: ev.Hash, Payload: ev.Payload}
		refs := append([]string(nil), ev.refs...)
		sort.Strings(refs)
		for _, ref := range refs {
			if line.Blobs == nil {
				line.Blobs = map[string]jsonlBlob{}
			}
			line.Blobs[ref] = inlineBlob(d.blobs, ref, limit)
		}
		if err := enc.Encode(line); err != nil {
			return fmt.Errorf("dossier: jsonl: seq %d: %w", ev.Seq, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("dossier: jsonl: %w", err)
	}
	return nil
}

func inlineBlob(blobs map[string][]byte, ref string, limit int) jsonlBlob {
	b, ok := blobs[ref]
	switch {
	case !ok:
		return jsonlBlob{Omitted: "missing from the store"}
	case limit < 0 || len(b) > limit:
		return jsonlBlob{Size: len(b), Omitted: fmt.Sprintf("larger than %d bytes", max(limit, 0))}
	case isBinary(b):
		return jsonlBlob{Size: len(b), Base64: base64.StdEncoding.EncodeToString(b)}
	}
	return jsonlBlob{Size: len(b), Text: string(b)}
}
