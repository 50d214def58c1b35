package memory

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session"
)

// CommitPlan is what a commit of a session will store, computed but not
// yet written. Local.Commit writes one; a replay plans the commit again
// with the replayed code and compares the events it gives with the
// recorded ones, so a change to memo extraction or archiving shows up as
// a divergence.
type CommitPlan struct {
	Namespace string
	Session   string
	Model     string // the extractor's model, "" when archiving
	Memos     []Memo
}

// Memo is one memory a commit stores.
type Memo struct {
	Text string
	Meta map[string]string
}

// PlanCommit computes what Commit(ctx, ns, s, opts...) stores, running the
// extractor if one is given. Errors: ErrInvalid, or the extractor's.
func PlanCommit(ctx context.Context, ns string, s *session.Session, opts ...CommitOption) (*CommitPlan, error) {
	if err := checkNamespace(ns); err != nil {
		return nil, err
	}
	if s == nil {
		return nil, invalidf("commit to %q: nil session", ns)
	}
	var o commitOptions
	for _, opt := range opts {
		opt(&o)
	}
	p := &CommitPlan{Namespace: ns, Session: s.ID()}
	if o.extractor != nil {
		ex, err := o.extractor.Extract(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("memory: commit %s to %q: extract: %w", s.ID(), ns, err)
		}
		p.Model = ex.Model
		for _, m := range ex.Memos {
			if strings.TrimSpace(m) == "" {
				continue
			}
			meta := map[string]string{"session": s.ID()}
			if p.Model != "" {
				meta["model"] = p.Model
			}
			p.Memos = append(p.Memos, Memo{Text: m, Meta: meta})
		}
		return p, nil
	}
	for i, c := range s.Chunks() {
		if (c.Role != events.RoleUser && c.Role != events.RoleAssistant) || strings.TrimSpace(c.Content) == "" {
			continue
		}
		meta := map[string]string{"session": s.ID(), "chunk": strconv.Itoa(i), "role": c.Role}
		if c.Author != "" {
			meta["author"] = c.Author
		}
		p.Memos = append(p.Memos, Memo{Text: c.Content, Meta: meta})
	}
	return p, nil
}

// IDs returns the memory ids of the plan's memos when the first is
// appended at version first of the namespace's stream.
func (p *CommitPlan) IDs(first int64) []string {
	ids := make([]string, len(p.Memos))
	for i := range p.Memos {
		ids[i] = DeriveID(p.Namespace, first+int64(i))
	}
	return ids
}

// Events returns the events of the commit appended at version first of
// the namespace's stream: one memory.remembered per memo, then the
// memory.committed naming them.
func (p *CommitPlan) Events(first int64) []events.Payload {
	ids := p.IDs(first)
	evs := make([]events.Payload, 0, len(p.Memos)+1)
	for i, m := range p.Memos {
		evs = append(evs, events.MemoryRemembered{Namespace: p.Namespace, ID: ids[i], Text: m.Text, Meta: m.Meta, Session: p.Session})
	}
	return append(evs, events.MemoryCommitted{Namespace: p.Namespace, Session: p.Session, IDs: ids, Model: p.Model})
}
