package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/gorath/rath/eventlog"
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
		o, err := m.origin(ctx, r.ID)
		if err != nil {
			return Usage{}, err
		}
		queue = append(queue, o.from...)
		imported = imported.Add(o.imported)
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

// origin is where a session's creation event says it came from: the
// session versions whose calls it inherits, and usage an import declared.
// Creation events never change, so origins are cached.
type origin struct {
	from     []events.ParentRef
	imported Usage
}

// maxOrigins bounds the origin cache; it is cleared when it grows past this.
const maxOrigins = 1 << 16

func (m *Manager) origin(ctx context.Context, id string) (origin, error) {
	m.mu.Lock()
	o, ok := m.origins[id]
	m.mu.Unlock()
	if ok {
		return o, nil
	}
	first, err := m.store.Read(ctx, eventlog.Query{Stream: id, Limit: 1})
	if err != nil {
		return o, fmt.Errorf("usage of %s: %w", id, err)
	}
	if len(first) == 0 {
		return o, fmt.Errorf("%w: usage of %s: no such session", ErrNotFound, id)
	}
	p, err := first[0].Decode()
	if errors.Is(err, events.ErrRedacted) {
		// Redacted or erased: the record kept its shape (an erasure's
		// without usage), else it counts its own calls only.
		p, err = m.keptShape(ctx, first[0])
	}
	if err != nil && !errors.Is(err, events.ErrUnknownType) {
		return o, fmt.Errorf("usage of %s: %w", id, err)
	}
	// A kind of session this build does not know counts its own calls only.
	switch e := p.(type) {
	case *events.SessionForked:
		o.from = []events.ParentRef{{ID: e.Source, Version: e.SourceVersion}}
	case *events.SessionCompressed:
		o.from = []events.ParentRef{{ID: e.Source, Version: e.SourceVersion}}
	case *events.SessionMerged:
		o.from = e.Parents
	case *events.SessionImported:
		o.imported = e.Usage
	}
	m.mu.Lock()
	if len(m.origins) >= maxOrigins {
		m.origins = map[string]origin{}
	}
	m.origins[id] = o
	m.mu.Unlock()
	return o, nil
}

// keptShape decodes the shape a redaction or an erasure kept of ev, a
// session's creation event: nil without an error if none was kept.
func (m *Manager) keptShape(ctx context.Context, ev events.Event) (events.Payload, error) {
	shapes, err := m.store.Shapes(ctx)
	if err != nil {
		return nil, err
	}
	sh, ok := shapes[ev.Seq]
	if !ok {
		return nil, nil
	}
	return sh.Decode(ev.Type)
}
