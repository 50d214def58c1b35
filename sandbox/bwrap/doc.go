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
//     /bin, /sbin, /lib* links; see [DefaultReadOnly]) bound read-only and
//     nosuid, with the password hashes masked ([DefaultMasked]), a fresh
//     /proc, a minimal /dev, and a private /tmp and /dev/shm in memory
//     with sizes ([Backend.TmpSize], [Backend.ShmSize]); nothing else of
//     the host.
//   - The workspace bound read-write at /workspace, the working directory
//     and HOME.
//   - New pid, ipc, uts, cgroup and network namespaces: no network unless
//     [Backend.Network] is set, no view of host processes. All
//     capabilities are dropped, and --die-with-parent ties the sandbox to
//     the rath process.
//   - An unprivileged user. Run by a normal user, bwrap puts the command
//     in a new user namespace as that user, and forbids it further user
//     namespaces. Run by root, bwrap would map root to root (a file the
//     command made setuid would be setuid root on the host), so the
//     command is started through setpriv(1) as [Backend.UID] and
//     [Backend.GID] (nobody by default), without capabilities and with
//     no_new_privs; the workspace is handed to that user at Open.
//   - Resource limits set with prlimit(1) before the shell starts, hard
//     and soft: RLIMIT_NPROC ([Backend.MaxProcesses]) and RLIMIT_AS per
//     process ([Backend.MaxMemory]). They bound one process and the
//     number of processes, not the total memory: put rath in a cgroup for
//     that.
//   - Only stdin, stdout and stderr: every other descriptor of rath,
//     including ones it inherited without close-on-exec, is closed on
//     exec (bwrap itself gets its info pipe, which it closes).
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
// namespaces are disabled), with bubblewrap's own message. It needs
// bubblewrap 0.8 or later (--size, --perms, --disable-userns) and the
// util-linux tools prlimit and, as root, setpriv.
//
// It imports package sandbox and its internal helpers only.
package bwrap
