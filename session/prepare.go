package session

import (
	"context"
	"fmt"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/projections"
)

// Prepared is a new root session not written yet: its id and the write
// that creates it (and places it, if asked). The caller appends Write in
// a transaction of its own, next to other writes, so that many sessions
// and what refers to them commit at once or not at all (a batch submit).
type Prepared struct {
	ID    string
	Write eventlog.Write
}

// PrepareNew builds the events of a root session with the given origin
// and chunks, placed on backend with spec unless backend is empty,
// without writing them. The placement is checked as Session.To checks
// it. The id is reserved in this process only: if another writer takes
// it first, the append fails with a *eventlog.ConflictError on ID's stream
// and nothing of the transaction is written.
func (m *Manager) PrepareNew(ctx context.Context, origin string, backend, spec string, chunks ...Chunk) (Prepared, error) {
	for i, c := range chunks {
		if err := c.Validate(); err != nil {
			return Prepared{}, fmt.Errorf("session: new: chunk %d: %w", i, err)
		}
	}
	if backend != "" {
		if m.checkBackend != nil {
			if err := m.checkBackend(backend); err != nil {
				return Prepared{}, fmt.Errorf("session: place: %w", err)
			}
		}
		if m.checkPlacement != nil {
			if err := m.checkPlacement(backend, spec); err != nil {
				return Prepared{}, fmt.Errorf("session: place: %w", err)
			}
		}
	} else if spec != "" {
		return Prepared{}, invalidf("a placement spec needs a backend")
	}
	seed := m.seedOf()
	counter, err := m.reserve(ctx, projections.CounterScope(seed, ""))
	if err != nil {
		return Prepared{}, fmt.Errorf("session: new: %w", err)
	}
	d := events.Derivation{Seed: seed, Scope: "", Op: "new", Counter: counter}
	id := DeriveID(seed, "", "new", counter)
	evs := []events.Payload{events.SessionCreated{Session: id, Origin: origin, Chunks: chunks, Derivation: d}}
	if backend != "" {
		evs = append(evs, events.SessionPlaced{Session: id, Backend: backend, Spec: spec})
	}
	return Prepared{ID: id, Write: eventlog.Write{Stream: id, Expected: eventlog.NoStream, Events: evs}}, nil
}
