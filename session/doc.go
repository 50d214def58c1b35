// Package session owns the Session value: the immutable handle that flows
// through a rath program the way a tensor flows through a network.
//
// A [*Session] is (id, version, chunks, placement, lineage, usage). Every
// operation (Append, Fork, Detach, Merge, To, Emit) records events in the
// log and returns a new handle; the old handle is unchanged. Appending
// through a handle that is no longer the head of its stream fails with a
// [*StaleError]: branching is always explicit, with Fork.
//
// # Ids
//
// Session ids are deterministic: derived from the run seed (from the
// context, see events.ContextWithRun), the parent session, the operation and
// a per-parent counter, so a run replayed with the same code yields the same
// ids. Rule for callers: one goroutine writes to one session at a time; to
// work in parallel, fork first.
//
// # Sharing
//
// Fork and Detach are O(1): the new session shares its parent's chunks,
// both in memory and in the store (see package projections).
//
// This package imports events and projections.
package session
