// Package opensandbox is the "opensandbox" sandbox backend: an HTTP client
// for an OpenSandbox server (https://github.com/alibaba/OpenSandbox), which
// runs each sandbox as a container.
//
// Two services are involved. The lifecycle server (OPEN_SANDBOX_DOMAIN,
// authenticated with OPEN_SANDBOX_API_KEY) creates, describes and deletes
// sandboxes and tells the client where each sandbox's execd daemon
// listens; execd, inside the container, runs commands and serves files.
// Open creates a sandbox, waits until it runs and execd answers, and
// creates the workspace directory (/workspace by default); Close deletes
// the sandbox.
//
// A placement's spec selects the image or an existing sandbox:
//
//	s.To(ctx, "opensandbox", "")                              // DefaultImage
//	s.To(ctx, "opensandbox", "python:3.11")                   // an image
//	s.To(ctx, "opensandbox", "image=python:3.11&timeout=2h")  // with a lifetime
//	s.To(ctx, "opensandbox", "id=3f0c...")                    // attach; Close leaves it
//
// # Running a real server
//
// A real OpenSandbox server needs Docker (or Kubernetes) on its host:
// install the opensandbox-server Python package, write a config with
// "opensandbox-server init-config --example docker <file>", start it, and
// point OPEN_SANDBOX_DOMAIN at it. The tests in this package do not need
// one: they run against package opensandboxtest, an in-process server
// implementing the subset of the API this client uses.
//
// # Differences from the host backends
//
// execd streams a command's output as one event per line, so stdout and
// stderr are rebuilt line by line and a missing final newline is added
// (Capabilities.ExactOutput is false); a single line longer than
// Backend.MaxFrame is counted and dropped rather than buffered. Stdin is
// not supported. Symlinks are resolved by the server inside the container
// (Capabilities.ConfinedSymlinks is false): the container, not the path
// check, is the isolation boundary. Paths are still checked lexically, so
// "..", and absolute paths outside the workspace, fail with
// sandbox.ErrPathEscape.
//
// It imports package sandbox and nothing else from rath.
package opensandbox
