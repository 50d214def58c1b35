// Package sandbox owns the contract between rath and the places where tools
// run: the [Backend] and [Sandbox] interfaces, the [Registry] that resolves a
// backend by name, and the [Pool] that opens one sandbox per placement and
// shares it.
//
// A session's placement (events.Placement: a backend name and a spec) says
// where its tools run, the way a tensor's device says where its ops run:
// session.To("local", "./work") places a session on a local workspace,
// session.To("bwrap", "./work") on the same directory inside bubblewrap, and
// session.To("opensandbox", "python:3.11") on a remote OpenSandbox container.
//
// # What it owns
//
//   - The interfaces: [Backend] (Name, Capabilities, Open) and [Sandbox]
//     (ID, Workdir, Exec, ReadFile, WriteFile, List, Stat, Close), plus the
//     optional [Remover]. Implementations live in the subpackages
//     sandbox/local, sandbox/bwrap and sandbox/opensandbox; the conformance
//     suite that they all pass lives in sandbox/sandboxtest.
//   - The path rules ([CleanPath]): every file operation takes a path
//     relative to the workspace; an absolute path is accepted only when it
//     lies under [Sandbox.Workdir]; anything that leaves the workspace fails
//     with [ErrPathEscape].
//   - Output capping ([CappedBuffer]): a command's stdout and stderr are kept
//     up to a limit (64 KiB by default) and only counted beyond it, so a
//     command that prints gigabytes costs no memory.
//   - File-change evidence ([FileChange]): writes and removals report the
//     SHA-256 of the content before and after, in the same hex form as
//     eventlog.BlobHash, so a tool layer can record diffs.
//   - Typed errors (errors.go).
//
// # What it does not own
//
// Tools, sessions and the event log. Recording which sandbox ran a call is
// the tool layer's job (package flow); this package only returns the facts.
// It imports package events for [events.Placement] and nothing else from
// rath; in particular it never imports flow.
//
// # Lifetime
//
// The runtime owns one [Registry] (a value, filled explicitly; there is no
// global registry and no init-time registration) and one [Pool]. A sandbox
// is opened lazily by [Pool.Get] on the first tool call for a placement, is
// shared by every session with that placement, and is closed by
// [Pool.Close] when the runtime closes.
package sandbox
