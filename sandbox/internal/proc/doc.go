// Package proc runs one command for the host-process backends
// (sandbox/local, and sandbox/bwrap, whose command is bwrap itself): in its
// own process group, with a timeout, with stdout and stderr copied into
// capped buffers, and with the whole group killed on timeout, on
// cancellation and after the command exits, so no background job outlives
// the call. The command inherits only stdin, stdout, stderr and the files
// passed on purpose (see CloseOnExec); on request a guard process kills
// its group when rath itself dies (see guard).
//
// It owns no path or file handling and imports only package sandbox from
// rath.
package proc
