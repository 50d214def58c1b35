package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/gorath/rath/events"
)

// unionUsage returns the usage of the provider calls in the ancestry of
// the given session versions, each call counted once. Summing the
// parents' usage would count a shared ancestor once per parent: two forks
// of a session that spent 1,000 tokens, merged, did not spend 2,000.
//
// A session's ancestry is the calls on its own stream up to its version
// plus the ancestry of where its creation event says it came from (a
// fork's or compression's source at the source version, a merge's parents
// at theirs); a root or detached session has none, and an imported
// session brings the usage its file declared, as one opaque amount. The
// ancestry of a version therefore only grows with the version, so the
// union over several is, per session, its calls up to the highest version
// reached.
func (m *Manager) unionUsage(ctx context.Context, refs []events.ParentRef) (Usage, error) {
	bounds := map[string]int64{}
	visited := map[string]bool{}
	var imported Usage
	queue := append([]events.ParentRef(nil), refs...)
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		bounds[r.ID] = max(bounds[r.ID], r.Version)
		if visited[r.ID] {
			continue
		}
		visited[r.ID] = true
		first, err := m.store.Read(ctx, events.Query{Stream: r.ID, Limit: 1})
		if err != nil {
			return Usage{}, fmt.Errorf("usage of %s: %w", r.ID, err)
		}
		if len(first) == 0 {
			return Usage{}, fmt.Errorf("%w: usage of %s: no such session", ErrNotFound, r.ID)
		}
		p, err := first[0].Decode()
		if errors.Is(err, events.ErrUnknownType) {
			continue // a kind of session this build does not know: its own calls only
		}
		if err != nil {
			return Usage{}, fmt.Errorf("usage of %s: %w", r.ID, err)
		}
		switch e := p.(type) {
		case *events.SessionForked:
			queue = append(queue, events.ParentRef{ID: e.Source, Version: e.SourceVersion})
		case *events.SessionCompressed:
			queue = append(queue, events.ParentRef{ID: e.Source, Version: e.SourceVersion})
		case *events.SessionMerged:
			queue = append(queue, e.Parents...)
		case *events.SessionImported:
			imported = imported.Add(e.Usage)
		}
	}
	own, err := m.reader.OwnUsage(ctx, bounds)
	if err != nil {
		return Usage{}, err
	}
	total := imported
	for _, u := range own {
		total = total.Add(u)
	}
	return total, nil
}
