package memory

import (
	"context"
	"errors"
	"fmt"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// List returns the live memories of ns in the order they were remembered.
// It folds the namespace's stream in the log, so it does not depend on the
// index. Errors: ErrInvalid or the store's.
func (l *Local) List(ctx context.Context, ns string) ([]Item, error) {
	if err := checkNamespace(ns); err != nil {
		return nil, err
	}
	return ListStream(ctx, l.store, ns, "")
}

// ListStream folds namespace ns's stream in the log into the live
// memories one backend stored there ("" for the local index), in the
// order they were remembered. Backends that record their writes as
// memory events list with it.
func ListStream(ctx context.Context, store *eventlog.Store, ns, backend string) ([]Item, error) {
	var items []Item
	pos := map[string]int{} // id -> index in items
	forgotten := 0
	for ev, err := range store.Scan(ctx, eventlog.Query{Stream: events.MemoryStream(ns), Types: indexedTypes}) {
		if err != nil {
			return nil, fmt.Errorf("memory: list %q: %w", ns, err)
		}
		p, err := ev.Decode()
		if errors.Is(err, events.ErrRedacted) {
			// Its text was deleted, or its subject erased (ErrErased
			// wraps ErrRedacted): it is no memory anyone can read.
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("memory: list %q: %w", ns, err)
		}
		switch e := p.(type) {
		case *events.MemoryRemembered:
			if e.Backend != backend {
				continue
			}
			pos[e.ID] = len(items)
			items = append(items, Item{ID: e.ID, Namespace: ns, Text: e.Text, Meta: e.Meta, Session: e.Session, Seq: ev.Seq})
		case *events.MemoryForgotten:
			if e.Backend != backend {
				continue
			}
			if i, ok := pos[e.ID]; ok && items[i].ID != "" {
				items[i].ID = "" // removed below, keeping the order
				forgotten++
			}
		}
	}
	if forgotten == 0 {
		return items, nil
	}
	live := make([]Item, 0, len(items)-forgotten)
	for _, it := range items {
		if it.ID != "" {
			live = append(live, it)
		}
	}
	return live, nil
}
