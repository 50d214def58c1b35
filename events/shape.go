package events

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
)

// A redaction deletes an event's content, not the structure other events
// stand on. A fork, a merge or a compression made later (by anyone who may
// fork) shares a prefix of the session the redacted events built, and the
// read models are rebuilt from the log: if the events that created the
// session or set its length were simply gone, the log would no longer
// rebuild. So a redaction keeps the shape of what it deletes:
//
//   - chunk.appended needs nothing kept: it always adds one chunk, at the
//     end of the session its stream is, so its leaf says all of its shape.
//   - The events that start a session (session.created, .forked,
//     .detached, .merged, .compressed, .imported) keep a Shape in the
//     evidence.redacted record: the payload with every chunk replaced by
//     RedactedChunk and the import's file name dropped. Ids, lineage,
//     lengths, placement, usage and derivation stay.
//
// Readers then see the session as it was, with RedactedChunk where its
// content was, in every session that shares it.

// Shape is the structure kept of one redacted event: a payload of the
// event's own type (at Version) with its content replaced, which the
// projections are rebuilt from in place of the deleted payload.
type Shape struct {
	Seq     int64           `json:"seq"`
	Version int             `json:"version"`
	Payload json.RawMessage `json:"payload"`
}

// RedactedChunkMeta is the Meta key of a RedactedChunk: its value is the
// seq of the redacted event that held the chunk.
const RedactedChunkMeta = "redacted"

// RedactedChunk stands in for a chunk whose event (seq) was redacted: the
// session keeps its length, and the chunk says its content was deleted.
func RedactedChunk(seq int64) Chunk {
	return Chunk{Role: RoleSystem, Content: "[redacted]", Meta: map[string]string{RedactedChunkMeta: strconv.FormatInt(seq, 10)}}
}

// IsRedactedChunk reports whether c stands in for a redacted chunk.
func IsRedactedChunk(c Chunk) bool {
	_, ok := c.Meta[RedactedChunkMeta]
	return ok && c.Role == RoleSystem && c.Content == "[redacted]"
}

// ErasedChunkMeta is the Meta key of an ErasedChunk: its value is the
// seq of the event that held the chunk.
const ErasedChunkMeta = "erased"

// ErasedChunk stands in for a chunk sealed under a subject's key that was
// erased since (rath erase): the session keeps its length, and the chunk
// says its content can no longer be read.
func ErasedChunk(seq int64) Chunk {
	return Chunk{Role: RoleSystem, Content: "[erased]", Meta: map[string]string{ErasedChunkMeta: strconv.FormatInt(seq, 10)}}
}

// IsErasedChunk reports whether c stands in for an erased chunk.
func IsErasedChunk(c Chunk) bool {
	_, ok := c.Meta[ErasedChunkMeta]
	return ok && c.Role == RoleSystem && c.Content == "[erased]"
}

// shapedTypes are the types whose redacted events keep a Shape.
var shapedTypes = map[string]bool{
	TypeSessionCreated: true, TypeSessionForked: true, TypeSessionDetached: true,
	TypeSessionMerged: true, TypeSessionCompressed: true, TypeSessionImported: true,
}

// ShapedTypes lists the types whose redacted or erased events keep a
// Shape, sorted.
func ShapedTypes() []string {
	out := make([]string, 0, len(shapedTypes))
	for t := range shapedTypes {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// KeepsShape reports whether a redacted event of type typ keeps a Shape.
func KeepsShape(typ string) bool { return shapedTypes[typ] }

// ShapeOf returns the Shape of the event seq of type typ whose payload is
// payload, and false for a type that keeps none.
func ShapeOf(seq int64, typ string, version int, payload []byte) (Shape, bool, error) {
	return shapeOf(seq, typ, version, payload, false)
}

// ErasureShapeOf is ShapeOf for an erasure: the shape keeps no placement
// and no usage either. An erasure clears the sandbox and usage of the
// sessions its subject started (rath's erasure.go), and a rebuild from
// the shape makes the same row.
func ErasureShapeOf(seq int64, typ string, version int, payload []byte) (Shape, bool, error) {
	return shapeOf(seq, typ, version, payload, true)
}

func shapeOf(seq int64, typ string, version int, payload []byte, erasure bool) (Shape, bool, error) {
	if !shapedTypes[typ] {
		return Shape{}, false, nil
	}
	p, err := Decode(typ, version, payload)
	if err != nil {
		return Shape{}, false, fmt.Errorf("events: redact: the shape of seq %d: %w", seq, err)
	}
	blank := func(cs []Chunk) []Chunk {
		out := make([]Chunk, len(cs))
		for i := range out {
			out[i] = RedactedChunk(seq)
		}
		return out
	}
	switch e := p.(type) {
	case *SessionCreated:
		e.Chunks = blank(e.Chunks)
	case *SessionMerged:
		e.Chunks = blank(e.Chunks)
	case *SessionCompressed:
		e.Chunks = blank(e.Chunks)
	case *SessionImported:
		e.File = ""
	}
	if erasure {
		switch e := p.(type) {
		case *SessionForked:
			e.Placement, e.Usage = Placement{}, Usage{}
		case *SessionDetached:
			e.Placement = Placement{}
		case *SessionMerged:
			e.Placement, e.Usage = Placement{}, Usage{}
		case *SessionCompressed:
			e.Placement, e.Usage = Placement{}, Usage{}
		case *SessionImported:
			e.Placement, e.Usage, e.DeclaredPlacement = Placement{}, Usage{}, nil
		}
	}
	raw, err := Canonical(p)
	if err != nil {
		return Shape{}, false, err
	}
	return Shape{Seq: seq, Version: p.EventVersion(), Payload: raw}, true, nil
}

// Decode decodes the shape as a payload of typ, the redacted event's type.
func (s Shape) Decode(typ string) (Payload, error) { return Decode(typ, s.Version, s.Payload) }

// IsRedactedPayload reports whether a payload as stored is the marker a
// redaction left in place of the deleted one.
func IsRedactedPayload(stored []byte) bool { return string(stored) == RedactedMarker }
