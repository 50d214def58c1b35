// Package bwrap is the "bwrap" sandbox backend: the local backend's
// workspace directory, with every command run inside bubblewrap
// (https://github.com/containers/bubblewrap, Debian package "bubblewrap").
//
// A placement's spec is the host workspace directory (created if missing);
// commands see it as /workspace:
//
//	s.To(ctx, "bwrap", "./work")
//
// # What each command gets
//
//   - A read-only root holding the system directories (/usr, /etc and the
//     /bin, /sbin, /lib* links; see [DefaultReadOnly]) bound read-only, a
//     fresh /proc, a minimal /dev and a private tmpfs /tmp; nothing else
//     of the host.
//   - The workspace bound read-write at /workspace, the working directory
//     and HOME.
//   - New user, pid, ipc, uts, cgroup and network namespaces
//     (--unshare-all): no network unless [Backend.Network] is set, no view
//     of host processes. All capabilities are dropped, and
//     --die-with-parent ties the sandbox to the rath process.
//   - The same timeout, output caps and small environment as the local
//     backend. Each Exec is its own bubblewrap instance with its own pid
//     namespace; when Exec returns, on timeout, cancellation or normal
//     exit, every process of that namespace is gone (see reap.go for how
//     that is made certain), so background jobs end with the call.
//
// File operations (ReadFile, WriteFile, ...) do not enter the sandbox:
// they act on the host directory through an os.Root, with the same
// escape protection as the local backend. A symlink a command made with an
// absolute target such as /workspace/a is therefore refused by the file
// operations even though it resolves inside the sandbox.
//
// # When bubblewrap cannot run
//
// Open fails with sandbox.ErrUnavailable when the bwrap binary is missing
// or cannot create namespaces (for example when unprivileged user
// namespaces are disabled), with bubblewrap's own message.
//
// It imports package sandbox and its internal helpers only.
package bwrap
