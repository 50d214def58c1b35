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
// Session ids are derived from a seed, the parent session, the operation
// and a per-parent counter (the inputs are recorded as events.Derivation).
// Inside a run the seed is the run's (the Manager and the sessions a run
// adopts with [Session.In] hold its eventlog.Scope), so a run replayed
// with the same code yields the same ids. Outside a run it is the Manager's local seed, random unless
// [WithLocalSeed] sets it, so sessions made in different stores or
// processes never share an id and can be exported from one store and
// imported into another. Rule for callers: one goroutine writes to one session at a time; to
// work in parallel, fork first.
//
// # Sharing
//
// Fork and Detach are O(1): the new session shares its parent's chunks,
// both in memory and in the store (see package projections).
//
// It imports events, projections and secret (enforced by allowedImports
// in the repository's style_test.go).
package session
