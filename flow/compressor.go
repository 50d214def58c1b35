package flow

import (
	"context"
	"fmt"
	"strings"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/session"
)

// DefaultCompressPrompt asks for a summary that keeps what later turns need.
const DefaultCompressPrompt = "Summarize the conversation so far for the assistant that will continue it. Keep decisions, facts, open questions, file names and tool results that matter. Be brief."

// Compressor is a workflow that replaces a session by a summary: one model
// call, no tools; the result is a new session (lineage kind "compress")
// holding one summary chunk, then the last KeepLast chunks if asked.
type Compressor struct {
	Provider *Provider
	// Prompt is the instruction; empty means DefaultCompressPrompt.
	Prompt string
	// KeepLast keeps that many of the last chunks after the summary.
	KeepLast int
	name     string
}

// NewCompressor returns a Compressor.
func NewCompressor(p *Provider, keepLast int) *Compressor {
	return &Compressor{Provider: p, KeepLast: keepLast}
}

// Name returns the path segment.
func (c *Compressor) Name() string { return c.name }

// SetName sets the path segment and returns c.
func (c *Compressor) SetName(name string) *Compressor { c.name = name; return c }

func (c *Compressor) recordsItself() bool { return true }

// Forward compresses s.
func (c *Compressor) Forward(ctx context.Context, s *session.Session) (*session.Session, error) {
	return c.forwardAs(ctx, s, "")
}

func (c *Compressor) forwardAs(ctx context.Context, s *session.Session, hint string) (*session.Session, error) {
	if hint == "" {
		hint = "compressor"
	}
	in := s
	ctx, s, path, err := enter(ctx, s, c, hint)
	if err != nil {
		return nil, err
	}
	out, err := c.compress(ctx, s, path)
	return exit(ctx, path, in, out, err)
}

func (c *Compressor) compress(ctx context.Context, s *session.Session, path string) (*session.Session, error) {
	prompt := c.Prompt
	if prompt == "" {
		prompt = DefaultCompressPrompt
	}
	var transcript strings.Builder
	for i, ch := range s.Chunks() {
		fmt.Fprintf(&transcript, "[%d %s] %s\n", i, ch.Role, ch.Content)
		for _, tc := range ch.ToolCalls {
			fmt.Fprintf(&transcript, "    calls %s(%s)\n", tc.Name, tc.Arguments)
		}
	}
	req := model.Request{Messages: []model.Message{
		{Role: events.RoleSystem, Content: prompt},
		{Role: events.RoleUser, Content: transcript.String()},
	}}
	resp, err := c.Provider.call(ctx, s.ID(), path, req, nil, sessionRecorder(&s), nil)
	if err != nil {
		return s, fmt.Errorf("flow: compressor %s: %w", path, err)
	}
	chunks := []events.Chunk{{Role: events.RoleSummary, Content: resp.Content, Author: path}}
	if k := min(c.KeepLast, s.Len()); k > 0 {
		chunks = append(chunks, s.Chunks()[s.Len()-k:]...)
	}
	return s.Compress(ctx, chunks...)
}
