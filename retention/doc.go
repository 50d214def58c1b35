// Package retention drops the payloads of old finished runs from a live
// store after archiving them, and keeps the proof: every leaf stays in the
// log, and every archived run verifies from its archive alone.
//
// [Retain] picks the runs that finished before a time (keeping the newest
// N), archives each through an [Archiver] (by default [LogArchiver], a
// directory per run: the run's leaf lines, the openings of their payload
// commitments, the blobs they name, inclusion proofs and the tree head
// they prove against; [VerifyArchive] checks one), then redacts their
// payloads with reason "retention" (eventlog.Store.Redact): run.started and
// run.finished stay readable, so the run is still listed. It never touches
// a run that is queued, running or waiting, nor a run a live session
// descends from (the session graph): a fork of its output still reads it.
//
// # What it does not own
//
// Redaction itself (package events), the projections rebuilt after it
// (package projections, through rath.Runtime), attested bundles (an
// Archiver of their own). It imports rath and events.
package retention
