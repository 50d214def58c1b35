package local_test

import (
	"bytes"
	"testing"

	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/sandbox/local"
)

// BenchmarkExec_True is the round trip of the cheapest command: fork, exec
// of sh -c true, wait, drain.
func BenchmarkExec_True(b *testing.B) {
	sb := MustOpen(b, &local.Backend{})
	req := sandbox.ExecRequest{Command: "true"}
	for b.Loop() {
		res, err := sb.Exec(b.Context(), req)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("exec: %v, exit %d", err, res.ExitCode)
		}
	}
}

// BenchmarkWriteRead_4KiB writes a 4 KiB file (with its before/after
// hashes) and reads it back.
func BenchmarkWriteRead_4KiB(b *testing.B) {
	sb := MustOpen(b, &local.Backend{})
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
