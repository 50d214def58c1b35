package flow

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/internal/oracle"
	"github.com/gorath/rath/memory"
	"github.com/gorath/rath/session"
)

// MemoryOptions configure an agent's memory.
type MemoryOptions struct {
	// Namespace is where the agent recalls and commits. Empty means
	// memory.AgentNamespace of the agent's module path.
	Namespace string
	// TopK is how many memories are recalled before a forward, with the
	// last user message as the query, and injected as memory chunks.
	// Zero means memory.DefaultK; negative turns recall off.
	TopK int
	// Commit commits the session to memory when the forward ends.
	Commit bool
	// Extract, if set, makes the commit store short memos that this
	// provider extracts in one recorded call, instead of archiving the
	// user and assistant text.
	Extract *Provider
}

type memoryConfig struct {
	m    memory.Memory
	opts MemoryOptions
}

// WithMemory gives the agent long-term memory: recall before each
// forward, and optionally a commit after it. Given more than once (one
// namespace each), the agent recalls from each in order and commits to
// each that asks for it.
func WithMemory(m memory.Memory, opts MemoryOptions) AgentOption {
	return func(a *Agent) error {
		if m == nil {
			return fmt.Errorf("flow: WithMemory needs a memory")
		}
		a.memory = append(a.memory, &memoryConfig{m: m, opts: opts})
		return nil
	}
}

func (c *memoryConfig) namespace(path string) string {
	if c.opts.Namespace != "" {
		return c.opts.Namespace
	}
	return memory.AgentNamespace(path)
}

// recall injects the memories matching the last user message, recording
// the recall and its hits on the session so a replay answers from them.
func (a *Agent) recall(ctx context.Context, s *session.Session, path string) (*session.Session, error) {
	for _, c := range a.memory {
		var err error
		if s, err = a.recallOne(ctx, c, s, path); err != nil {
			return s, err
		}
	}
	return s, nil
}

func (a *Agent) recallOne(ctx context.Context, c *memoryConfig, s *session.Session, path string) (*session.Session, error) {
	if c.opts.TopK < 0 {
		return s, nil
	}
	var query string
	for i := s.Len() - 1; i >= 0; i-- {
		if ch := s.Chunk(i); ch.Role == events.RoleUser {
			query = ch.Content
			break
		}
	}
	if strings.TrimSpace(query) == "" {
		return s, nil
	}
	k := c.opts.TopK
	if k == 0 {
		k = memory.DefaultK
	}
	ns := c.namespace(path)
	var hits []events.MemoryHit
	var failure string
	answered := false
	if o := oracle.From(ctx); o != nil {
		ans, err := o.Recall(ctx, oracle.RecallCall{Session: s.ID(), Agent: path, Namespace: ns, Query: query})
		if err != nil {
			return s, err
		}
		if !ans.Live {
			hits, failure, answered = ans.Hits, ans.Error, true
		}
	}
	if !answered {
		found, err := c.m.Recall(ctx, ns, query, k)
		if err != nil && !errors.Is(err, memory.ErrBackend) {
			return s, fmt.Errorf("flow: agent %s recall: %w", path, err)
		}
		if err != nil {
			// A memory server down, slow or answering nonsense: the
			// failure is recorded and the agent goes on without hits.
			failure = err.Error()
		}
		for _, h := range found {
			hits = append(hits, memory.EventHit(h))
		}
	}
	rec := session.Record{Events: []events.Payload{events.MemoryRecalled{Namespace: ns, Query: query, K: k, Hits: hits, Session: s.ID(), Agent: path,
		Backend: memory.BackendOf(c.m), Error: failure}}}
	for _, h := range hits {
		rec.Chunks = append(rec.Chunks, events.Chunk{Role: events.RoleMemory, Content: h.Text, Author: path, Meta: map[string]string{"memory_id": h.ID}})
	}
	return s.Record(ctx, rec)
}

// commit commits the finished session to memory. In a replay the commit
// is computed again by this code (the extraction's model call answered by
// the oracle) and appended to the replay's store at the recorded stream
// version, where the replay compares it with the record.
func (a *Agent) commit(ctx context.Context, s *session.Session, path string) (*session.Session, error) {
	for _, c := range a.memory {
		var err error
		if s, err = a.commitOne(ctx, c, s, path); err != nil {
			return s, err
		}
	}
	return s, nil
}

func (a *Agent) commitOne(ctx context.Context, c *memoryConfig, s *session.Session, path string) (*session.Session, error) {
	if !c.opts.Commit {
		return s, nil
	}
	ns := c.namespace(path)
	cur := s
	var opts []memory.CommitOption
	if c.opts.Extract != nil {
		opts = append(opts, memory.WithExtractor(memory.ExtractorFunc(func(ctx context.Context, _ *session.Session) (memory.Extraction, error) {
			return a.extract(ctx, c, &cur, path, s)
		})))
	}
	if o := oracle.From(ctx); o != nil {
		ans, err := o.Commit(ctx, oracle.CommitCall{Session: s.ID(), Agent: path, Namespace: ns})
		if err != nil {
			return cur, err
		}
		if !ans.Live {
			var evs []events.Payload
			if r, ok := c.m.(memory.CommitReplayer); ok {
				// The commit is a server's answer: rebuilt from the
				// session and the record, with no request.
				if evs, err = r.ReplayCommit(ctx, ns, s, ans.Recorded); err != nil {
					return cur, fmt.Errorf("flow: agent %s commit (replayed): %w", path, err)
				}
			} else {
				plan, err := memory.PlanCommit(ctx, ns, s, opts...)
				if err != nil {
					return cur, fmt.Errorf("flow: agent %s commit (replayed): %w", path, err)
				}
				evs = plan.Events(ans.First)
			}
			w := eventlog.Write{Stream: events.MemoryStream(ns), Expected: ans.First - 1, Events: evs}
			if _, err := s.Manager().Appender().AppendWrites(ctx, w); err != nil {
				return cur, fmt.Errorf("flow: agent %s commit (replayed): %w", path, err)
			}
			return cur, nil
		}
	}
	if _, err := c.m.Commit(ctx, ns, s, opts...); err != nil {
		if errors.Is(err, memory.ErrBackend) {
			// The backend recorded the failure with the commit; the
			// agent's work is done and stays done.
			return cur, nil
		}
		return cur, fmt.Errorf("flow: agent %s commit: %w", path, err)
	}
	return cur, nil
}

// ExtractPrompt asks for memos worth keeping.
const ExtractPrompt = "List the facts, decisions and lessons from this conversation worth remembering for next time, one short memo per line, no numbering. Answer with the memos only."

// extract makes the one recorded model call that turns the session into
// memos; it is recorded on the session's stream (cur follows it).
func (a *Agent) extract(ctx context.Context, c *memoryConfig, cur **session.Session, path string, s *session.Session) (memory.Extraction, error) {
	p := c.opts.Extract
	var transcript strings.Builder
	for _, ch := range s.Chunks() {
		if ch.Role == events.RoleUser || ch.Role == events.RoleAssistant {
			fmt.Fprintf(&transcript, "%s: %s\n", ch.Role, ch.Content)
		}
	}
	req := model.Request{Messages: []model.Message{{Role: events.RoleSystem, Content: ExtractPrompt}, {Role: events.RoleUser, Content: transcript.String()}}}
	resp, err := p.call(ctx, (*cur).ID(), path+".memory", req, nil, sessionRecorder(cur), nil)
	if err != nil {
		return memory.Extraction{}, err
	}
	var memos []string
	for _, line := range strings.Split(resp.Content, "\n") {
		if m := strings.TrimSpace(strings.TrimLeft(line, "-*• ")); m != "" {
			memos = append(memos, m)
		}
	}
	return memory.Extraction{Model: p.Model, Memos: memos}, nil
}
