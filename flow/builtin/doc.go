// Package builtin owns rath's built-in sandbox tools: the six tools an agent
// can be given to act on its session's workspace, with the same names and
// argument names as the Python OpenRath so prompts carry over.
//
//	run_shell_command      {cmd}
//	read_workspace_file    {path}
//	write_workspace_file   {path, content}
//	list_workspace_files   {path, recursive}
//	workspace_path_exists  {path}
//	run_code               {code, language, timeout}
//
// They are opt-in: [New] returns all of them, or the ones named, as
// [flow.Tool] values to pass to [flow.WithTools]. Each call acts on the
// sandbox of the calling session's placement, taken from the runtime's
// [sandbox.Pool] (s.To(ctx, "local", "./work") places a session); a session
// with no placement gets a [flow.ToolError] of kind
// [flow.ToolErrNoPlacement] saying how to place it.
//
// # What the model sees
//
// Commands report their exit code, then stdout and stderr, each with a
// mark when the sandbox cut it at its output cap. A binary file, or binary
// command output, is described by its size instead of being pasted. A path
// that leaves the workspace ("../x", "/etc/passwd", a symlink pointing
// out) is an error naming the path, never content. run_code runs python
// (python3), bash, go or node when the program is installed inside the
// sandbox; otherwise the error names the missing program.
//
// # Evidence
//
// Every result carries the backend name and sandbox id, and commands their
// exit code, which the agent loop records on tool.returned. Every file
// written by write_workspace_file is reported as an [events.FileChange]
// with the SHA-256 of its content before and after, and both contents go
// in the result's Blobs so a dossier can show the diff.
//
// run_shell_command and run_code also report the files a command created,
// modified or deleted: the workspace's regular files are read and hashed
// before and after the command and compared. To keep that bounded, see
// [Tracking]; what is not tracked:
//
//   - the whole workspace, when it has more than Tracking.MaxFiles regular
//     files or more than Tracking.MaxBytes of them (the result says so);
//   - single files larger than Tracking.MaxFileBytes (a size or time change
//     of one is named in the result, without contents);
//   - anything under .git, symlinks, directories (an empty new directory
//     is not a change), and permission-only changes;
//   - files outside the workspace (a local-backend command can write
//     anywhere its user can) and run_code's own temporary file;
//   - the author of a change: a file changed during the command by anything
//     else sharing the workspace is reported as the command's change.
//
// # What it does not own
//
// The sandboxes (package sandbox and its backends), the agent loop that
// records the evidence (package flow) and the event log. It imports flow,
// session, sandbox and events.
package builtin
