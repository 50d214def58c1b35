package projections

import (
	"fmt"

	"github.com/gorath/rath/events"
)

// An Append usually carries several events of one session (a model call,
// its chunks, a tool's result), and each moves the session's row: its
// version, and its length or token totals. Those updates are held back and
// written as one UPDATE per session at the Append's end (EndRequest), or
// earlier when an event needs the row as it stands (a fork reads the
// source's length, a snapshot copies the row). They are increments and a
// latest version, so writing them together gives the same row.

// heldKey is the events.Tx value key of an Append's held updates.
type heldKey struct{}

// heldUpdates are the session row updates an Append has held back, in the
// order their sessions were first touched.
type heldUpdates struct {
	deltas []*sessionDelta
}

// sessionDelta is what the held events change in one session's row.
type sessionDelta struct {
	id string
	// chunks appended, the first at index firstIndex: the row's length
	// must be firstIndex when they are written.
	chunks, firstIndex int64
	// provider calls on the session's own stream and their tokens; the
	// session must exist.
	calls                     int64
	prompt, completion, total int64
	version, updatedSeq       int64
}

// heldIn returns tx's held updates, making them on first use.
func heldIn(tx *events.Tx) *heldUpdates {
	if h, ok := tx.Value(heldKey{}).(*heldUpdates); ok {
		return h
	}
	h := &heldUpdates{}
	tx.SetValue(heldKey{}, h)
	return h
}

func (h *heldUpdates) delta(id string) *sessionDelta {
	for _, d := range h.deltas {
		if d.id == id {
			return d
		}
	}
	d := &sessionDelta{id: id}
	h.deltas = append(h.deltas, d)
	return d
}

// holdBack holds back ev's update of its session row, if ev only moves the
// row (a chunk, a model call on the session's own stream, any event apply
// has no case for), and reports whether it did. Other events, and a chunk
// whose index does not follow the held ones, go through apply, which
// reports what is wrong precisely.
func (a *applier) holdBack(ev *events.Event, p events.Payload) (bool, error) {
	if a.held == nil || a.cache != nil {
		return false, nil
	}
	switch e := p.(type) {
	case *events.ChunkAppended:
		if ev.Stream != e.Session {
			return false, nil
		}
		d := a.held.delta(e.Session)
		if d.chunks == 0 {
			d.firstIndex = e.Index
		} else if e.Index != d.firstIndex+d.chunks {
			return false, nil
		}
		d.chunks++
		d.version, d.updatedSeq = ev.Version, ev.Seq
		return true, nil
	case *events.ProviderCalled:
		if ev.Stream != e.Session {
			return false, nil // a side stream's call: no session total moves
		}
		if err := a.insertUsage(ev, e); err != nil {
			return false, err
		}
		d := a.held.delta(e.Session)
		d.calls++
		d.prompt += e.Usage.PromptTokens
		d.completion += e.Usage.CompletionTokens
		d.total += e.Usage.TotalTokens
		d.version, d.updatedSeq = ev.Version, ev.Seq
		return true, nil
	case *events.SessionCreated, *events.SessionForked, *events.SessionDetached, *events.SessionMerged,
		*events.SessionPlaced, *events.SessionImported, *events.SessionCompressed,
		*events.RunStarted, *events.RunFinished, *events.RunSubmitted, *events.RunLeased,
		*events.ApprovalRequested, *events.ApprovalDecided:
		return false, nil
	}
	// Any other event moves its stream's version, if the stream is a
	// session's (touch).
	d := a.held.delta(ev.Stream)
	d.version, d.updatedSeq = ev.Version, ev.Seq
	return true, nil
}

const heldUpdate = `UPDATE sessions SET length = length + ?, prompt_tokens = prompt_tokens + ?, completion_tokens = completion_tokens + ?,
	total_tokens = total_tokens + ?, calls = calls + ?, version = ?, updated_seq = ? WHERE id = ?`

// flushHeld writes the held updates.
func (a *applier) flushHeld() error {
	if a.held == nil || len(a.held.deltas) == 0 {
		return nil
	}
	deltas := a.held.deltas
	a.held.deltas = a.held.deltas[:0]
	for _, d := range deltas {
		if err := a.writeDelta(d); err != nil {
			return err
		}
	}
	return nil
}

func (a *applier) writeDelta(d *sessionDelta) error {
	if d.chunks == 0 && d.calls == 0 {
		// Only a version moved; a stream that is no session's matches no row.
		_, err := a.tx.Exec(`UPDATE sessions SET version = ?, updated_seq = ? WHERE id = ?`, d.version, d.updatedSeq, d.id)
		return err
	}
	q, args := heldUpdate, []any{d.chunks, d.prompt, d.completion, d.total, d.calls, d.version, d.updatedSeq, d.id}
	if d.chunks > 0 {
		// The first held chunk's index must be the stored length.
		q, args = q+` AND length = ?`, append(args, d.firstIndex)
	}
	res, err := a.tx.Exec(q, args...)
	if err != nil {
		return fmt.Errorf("projections: update session %q: %w", d.id, err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	si, ok, err := a.lookup(d.id)
	switch {
	case err != nil:
		return err
	case !ok && d.chunks > 0:
		return inconsistent("chunk for unknown session %q", d.id)
	case !ok:
		return inconsistent("provider call for unknown session %q", d.id)
	default:
		return inconsistent("chunk index %d for session %q, which has %d chunks", d.firstIndex, d.id, si.length)
	}
}
