package sandbox_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/sandbox"
)

func TestIsBinary(t *testing.T) {
	euro := "€" // 3 bytes
	tests := []struct {
		name string
		data string
		want bool
	}{
		{"empty", "", false},
		{"ascii", "hello\nworld\n", false},
		{"utf8", "ünïcödé ✓ 日本語", false},
		{"nul", "abc\x00def", true},
		{"invalid utf8", "abc\xffdef", true},
		{"latin1", "caf\xe9", true},
		{"elf header", "\x7fELF\x02\x01\x01\x00", true},
		// A rune cut by the 8 KiB window is not binary evidence.
		{"rune across the window", strings.Repeat("a", 8<<10-1) + euro + "tail", false},
		{"nul after the window", strings.Repeat("a", 8<<10) + "\x00", false},
	}
	for _, tt := range tests {
		if got := sandbox.IsBinary([]byte(tt.data)); got != tt.want {
			t.Errorf("IsBinary(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestHash(t *testing.T) {
	data := []byte("some file content")
	if got, want := sandbox.Hash(data), eventlog.BlobHash(data); got != want {
		t.Errorf("Hash = %s, want eventlog.BlobHash %s", got, want)
	}
	got, err := sandbox.HashReader(bytes.NewReader(data))
	if err != nil || got != sandbox.Hash(data) {
		t.Errorf("HashReader = %s, %v; want %s", got, err, sandbox.Hash(data))
	}
	if sandbox.Hash(nil) == "" {
		t.Error("the hash of an empty file is empty; it must differ from 'absent'")
	}
}

func TestCappedBuffer(t *testing.T) {
	tests := []struct {
		limit     int
		writes    []string
		kept      string
		total     int64
		truncated bool
	}{
		{10, []string{"hello"}, "hello", 5, false},
		{5, []string{"hello"}, "hello", 5, false},
		{4, []string{"hello"}, "hell", 5, true},
		{4, []string{"he", "llo", " world"}, "hell", 11, true},
		{0, []string{"x"}, "", 1, true},
		{3, nil, "", 0, false},
	}
	for _, tt := range tests {
		b := &sandbox.CappedBuffer{Limit: tt.limit}
		for _, w := range tt.writes {
			n, err := b.Write([]byte(w))
			if n != len(w) || err != nil {
				t.Errorf("Write(%q) = %d, %v; want %d, nil", w, n, err, len(w))
			}
		}
		if got := string(b.Bytes()); got != tt.kept {
			t.Errorf("limit %d, writes %q: kept %q, want %q", tt.limit, tt.writes, got, tt.kept)
		}
		if b.Total() != tt.total || b.Truncated() != tt.truncated {
			t.Errorf("limit %d, writes %q: total %d truncated %v, want %d %v", tt.limit, tt.writes, b.Total(), b.Truncated(), tt.total, tt.truncated)
		}
	}
	if got := sandbox.NewCappedBuffer(0).Limit; got != sandbox.DefaultMaxOutput {
		t.Errorf("NewCappedBuffer(0).Limit = %d, want %d", got, sandbox.DefaultMaxOutput)
	}
}

func TestCappedBuffer_BoundedMemory(t *testing.T) {
	b := sandbox.NewCappedBuffer(1 << 10)
	chunk := make([]byte, 32<<10)
	allocs := testing.AllocsPerRun(100, func() {
		b.Write(chunk)
	})
	if allocs > 0 {
		t.Errorf("Write past the cap allocates %.1f times per call", allocs)
	}
	if cap(b.Bytes()) > 1<<10 {
		t.Errorf("buffer capacity %d exceeds the limit", cap(b.Bytes()))
	}
}
