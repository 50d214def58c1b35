// Package dossier gathers everything the log holds about one run into a
// Dossier and renders it as evidence: one self-contained HTML file, a
// Markdown file, or JSON lines.
//
// # What a dossier shows
//
// [Build] reads the run's events (every event carrying the run id, in seq
// order) and, around them, the sessions the run touched with their
// transcripts as of the run's last event, the lineage edges between them,
// tool calls with their outputs and file diffs, provider calls with usage,
// latency and the rebuilt request, memory writes and recalls, selector
// decisions, workflow enter/exit spans, the hash-chain head and a
// verification, made before anything is read, of the chain, the blobs and
// the projections the sessions and usage are read from (rath.Runtime.Verify);
// the dossier states exactly what it proved. A replay verdict is shown when the caller
// passes one ([Options].Replay): building a dossier never replays.
//
// # The session graph
//
// Nodes are the sessions the run touched, plus their lineage parents that
// it did not touch (drawn dashed, as context; further ancestors are left
// to `rath graph`). Edges are the lineage edges (fork, merge, compress,
// import) and, dashed, the provenance of a detached session, which has no
// lineage parent but keeps its source in the log. A loop, the same session
// entering the same workflow path more than once (a selector picking the
// same agent again), is drawn as a self-loop arc on the node and labelled
// inside it ("↻ root.coder ×2"). The layout is layered and computed here:
// longest-path layering by lineage, then a few barycenter sweeps to reduce
// crossings. It is deterministic: ties keep creation order.
//
// # Rendering guarantees
//
// Every renderer is deterministic: the same store gives the same bytes
// (no "generated at" clock; the times shown are the events' recorded
// times). HTML goes through html/template, so model and tool text is
// always escaped; the page holds no script and loads nothing: CSS and SVG
// are inline, every link is a fragment. Markdown puts model and tool text
// in fenced code blocks (fences longer than any backtick run inside) and
// entity-escapes the short inline fields.
//
// # Scope
//
// This package reads; it never writes to the store. It imports rath,
// events, projections, session, flow (for [flow.RequestLoader]), flow/model
// and replay (for the report type). `rath dossier`, the web console and
// library programs all build dossiers through [Build] and write them with
// [Dossier.Render].
package dossier
