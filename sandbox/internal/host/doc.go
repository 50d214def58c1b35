// Package host is the sandbox.Sandbox shared by the backends whose
// workspace is a host directory (sandbox/local and sandbox/bwrap). They
// differ only in how a command is launched, which they supply as a
// [Launcher]; file operations, defaults, concurrency and Close live here.
//
// It imports package sandbox and the internal hostfs and proc helpers.
package host
