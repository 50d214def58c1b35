// Package opensandboxtest is an in-process OpenSandbox server for tests:
// the lifecycle API and execd, limited to the subset the opensandbox
// client uses, with the real services' wire formats (status codes, the
// three error-body shapes, the bare-JSON command stream with one event per
// output line and a connection that lingers after the terminal event
// (a second, as execd, or until the client hangs up: Options.Linger),
// paired multipart uploads, octal-digit modes).
//
// It is a test double, not a container runtime. A "container's"
// filesystem is the host filesystem below [Options.Root], with container
// paths equal to host paths, and commands run as host processes. Create
// sandboxes with a spec such as "workdir=<dir under Root>" so each gets its
// own workspace. Paths outside Root are refused.
//
// Deviations from the real execd, kept small on purpose: an output line
// longer than Options.MaxLine is sent as several events; background jobs
// of a command are killed when it exits, so a stream always ends; output
// is read from pipes rather than polled from files.
//
// From rath it imports only sandbox/internal/proc (to start commands with
// no inherited descriptors).
package opensandboxtest
