package jsonl

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session"
)

// Export writes the head of session id to w as one JSONL file: a header,
// one chunk record per chunk and a trailer (see the package doc). Shared
// prefixes of forks are written out in full, so the file stands alone.
// Errors: session.ErrNotFound for an unknown id, and read or write errors.
func Export(ctx context.Context, m *session.Manager, id string, w io.Writer) error {
	s, err := m.Load(ctx, id)
	if err != nil {
		return fmt.Errorf("jsonl: export %s: %w", id, err)
	}
	row, err := m.Reader().Session(ctx, id)
	if err != nil {
		return fmt.Errorf("jsonl: export %s: %w", id, err)
	}
	l := s.Lineage()
	h := wireHeader{
		RecordType: RecordHeader, ID: id, ParentSessionIDs: l.Parents, LineageKind: l.Kind,
		SandboxBackend: s.Placement().Backend, SandboxSpec: s.Placement().Spec,
		Format: FormatExport, Version: FormatVersion, Source: l.Source, Origin: row.Origin,
		SessionVersion: s.Version(), Incomplete: row.Incomplete,
	}
	if l.Kind == session.KindImport {
		// An imported session keeps the lineage its file declared, linked
		// or not, so exporting it again loses nothing.
		if err := declaredLineage(ctx, m, id, &h); err != nil {
			return err
		}
	}
	if h.ParentSessionIDs == nil {
		h.ParentSessionIDs = []string{}
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(h); err != nil {
		return fmt.Errorf("jsonl: export %s: %w", id, err)
	}
	for i, c := range s.Chunks() {
		if err := enc.Encode(wireChunk{RecordType: RecordChunk, Index: int64(i), Kind: kindOf(c.Role), Payload: payloadOf(c)}); err != nil {
			return fmt.Errorf("jsonl: export %s chunk %d: %w", id, i, err)
		}
	}
	t := wireTrailer{RecordType: RecordTrailer, FinalChunkCount: int64(s.Len()), CumulativeUsage: toWireUsage(s.Usage())}
	if err := enc.Encode(t); err != nil {
		return fmt.Errorf("jsonl: export %s: %w", id, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("jsonl: export %s: %w", id, err)
	}
	return nil
}

func declaredLineage(ctx context.Context, m *session.Manager, id string, h *wireHeader) error {
	evs, err := m.Store().Read(ctx, eventlog.Query{Stream: id, Limit: 1})
	if err != nil {
		return fmt.Errorf("jsonl: export %s: %w", id, err)
	}
	if len(evs) == 0 {
		return nil
	}
	p, err := evs[0].Decode()
	if err != nil {
		return fmt.Errorf("jsonl: export %s: %w", id, err)
	}
	if e, ok := p.(*events.SessionImported); ok {
		h.ParentSessionIDs = e.DeclaredParents
		h.LineageKind = e.LineageKind
	}
	return nil
}

// kindOf maps a chunk role to an OpenRath kind. Summary and memory chunks
// have no OpenRath kind; they are context for the model, so an OpenRath
// reader gets them as system chunks and rath restores the role from the
// extras.
func kindOf(role string) string {
	switch role {
	case events.RoleUser, events.RoleAssistant, events.RoleToolResult:
		return role
	}
	return KindSystem
}

func payloadOf(c events.Chunk) wirePayload {
	content := c.Content
	p := wirePayload{Content: &content, Name: c.Name, ToolCallID: c.ToolCallID}
	for _, tc := range c.ToolCalls {
		args, _ := json.Marshal(tc.Arguments) // marshalling a string cannot fail
		p.ToolCalls = append(p.ToolCalls, wireToolCall{ID: tc.ID, Type: "function", Function: wireFunction{Name: tc.Name, Arguments: args}})
	}
	x := wireExtras{Author: c.Author, Meta: c.Meta}
	if kindOf(c.Role) != c.Role {
		x.Role = c.Role
	}
	if x.Role != "" || x.Author != "" || len(x.Meta) > 0 {
		p.Rath = &x
	}
	return p
}
