//go:build integration

package bwrap_test

import (
	"bytes"
	"testing"

	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/sandbox/bwrap"
)

// BenchmarkExec_True is the round trip of the cheapest command: a whole
// bubblewrap sandbox (namespaces, mounts) set up and torn down for true.
func BenchmarkExec_True(b *testing.B) {
	sb := MustOpen(b, &bwrap.Backend{})
	req := sandbox.ExecRequest{Command: "true"}
	for b.Loop() {
		res, err := sb.Exec(b.Context(), req)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("exec: %v, exit %d, stderr %q", err, res.ExitCode, res.Stderr)
		}
	}
}

// BenchmarkWriteRead_4KiB writes and reads back a 4 KiB file. File
// operations act on the host directory, so this matches the local figure.
func BenchmarkWriteRead_4KiB(b *testing.B) {
	sb := MustOpen(b, &bwrap.Backend{})
	data := bytes.Repeat([]byte("0123456789abcdef"), 256)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := sb.WriteFile(b.Context(), "bench/file.txt", data); err != nil {
			b.Fatal(err)
		}
		got, err := sb.ReadFile(b.Context(), "bench/file.txt")
		if err != nil || len(got) != len(data) {
			b.Fatalf("read: %d bytes, %v", len(got), err)
		}
	}
}
