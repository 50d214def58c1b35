// Package local is the "local" sandbox backend: a workspace directory on the
// host, with commands run as host processes inside it.
//
// A placement's spec is the workspace directory (created if missing):
//
//	s.To(ctx, "local", "./work")
//
// # What it guarantees
//
//   - File operations go through an os.Root opened on the workspace, so
//     "..", absolute paths outside the workspace and symlinks that lead out
//     of it fail with sandbox.ErrPathEscape, including symlinks a command
//     created a moment earlier.
//   - Commands run as sh -c in the workspace, in their own process group,
//     with a per-call timeout; on timeout or cancellation the whole group is
//     killed, and after the command exits any background job it left in
//     the group is killed too. If rath itself dies, even by SIGKILL, the
//     group is killed as well: a guard process kills it when its pipe
//     from rath closes. With a POSIX shell (sh, dash, bash, ksh, zsh) one
//     guard per Backend, started with its first command, holds the group
//     of every command that runs, and a command's shell waits until its
//     group is held before it runs the command's first line: two short
//     writes a command, where a guard of its own cost two forks (about
//     0.25 ms of CPU and of wall time a command on a 2-core VM). With
//     another shell a guard program leads each command's group.
//   - Commands inherit only stdin, stdout and stderr: descriptors rath
//     inherited without close-on-exec are marked close-on-exec first.
//   - stdout and stderr are capped (sandbox.DefaultMaxOutput each by
//     default); the excess is counted, not stored.
//   - Commands get a small environment (PATH, HOME set to the workspace,
//     LANG, TERM, ...) rather than the host's, so API keys and tokens in
//     the host environment are not passed unless named in
//     [Backend.PassEnv] or [Backend.Env].
//
// # What it does not guarantee
//
// Isolation. A command is an ordinary host process running as the rath
// process's user: it can cd out of the workspace, read and write whatever
// that user can, see other processes and use the network. Use the bwrap
// backend (sandbox/bwrap) when the commands are not trusted.
//
// It imports package sandbox and its internal helpers only.
package local
