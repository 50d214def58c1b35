package eventlog

import (
	"context"
	"fmt"
	"github.com/gorath/rath/events"
)

// Shapes returns the shapes every redaction and erasure recorded, by the
// seq of the redacted or erased event.
func (s *Store) Shapes(ctx context.Context) (map[int64]events.Shape, error) {
	out := map[int64]events.Shape{}
	for ev, err := range s.Scan(ctx, Query{Stream: events.StreamEvidence}) {
		if err != nil {
			return nil, fmt.Errorf("eventlog: read the redactions' shapes: %w", err)
		}
		p, err := ev.Decode()
		if err != nil {
			return nil, fmt.Errorf("eventlog: read the redactions' shapes: %w", err)
		}
		var shapes []events.Shape
		switch rec := p.(type) {
		case *events.EvidenceRedacted:
			shapes = rec.Shapes
		case *events.EvidenceErased:
			shapes = rec.Shapes
		}
		for _, sh := range shapes {
			out[sh.Seq] = sh
		}
	}
	return out, nil
}
