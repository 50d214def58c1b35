package sandboxtest

import (
	"bytes"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/gorath/rath/sandbox"
)

func (s *suite) testWriteRead(t *testing.T) {
	sb := s.open(t)
	tests := []struct {
		name, path, clean, content string
	}{
		{"top level", "a.txt", "a.txt", "alpha\n"},
		{"parents created", "dir/sub/b.txt", "dir/sub/b.txt", "beta"},
		{"unclean", "./dir//sub/../c.txt", "dir/c.txt", "gamma"},
		{"absolute under workdir", sb.Workdir() + "/abs.txt", "abs.txt", "delta"},
		{"empty", "empty.txt", "empty.txt", ""},
		{"unicode name", "données/ü.txt", "données/ü.txt", "ünïcödé ✓\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := s.write(t, sb, tt.path, tt.content)
			want := sandbox.FileChange{Path: tt.clean, Before: "", After: sandbox.Hash([]byte(tt.content))}
			if ch != want {
				t.Errorf("FileChange = %+v, want %+v", ch, want)
			}
			for _, p := range []string{tt.path, tt.clean} {
				got, err := sb.ReadFile(t.Context(), p)
				if err != nil {
					t.Fatalf("read %s: %v", p, err)
				}
				if string(got) != tt.content {
					t.Errorf("read %s = %q, want %q", p, got, tt.content)
				}
			}
		})
	}
	t.Run("overwrite", func(t *testing.T) {
		s.write(t, sb, "o.txt", "a much longer first version\n")
		ch := s.write(t, sb, "o.txt", "short\n")
		want := sandbox.FileChange{Path: "o.txt", Before: sandbox.Hash([]byte("a much longer first version\n")), After: sandbox.Hash([]byte("short\n"))}
		if ch != want || !ch.Changed() {
			t.Errorf("FileChange = %+v, want %+v", ch, want)
		}
		if got, _ := sb.ReadFile(t.Context(), "o.txt"); string(got) != "short\n" {
			t.Errorf("after overwrite: %q (old bytes left behind?)", got)
		}
		ch = s.write(t, sb, "o.txt", "short\n")
		if ch.Changed() {
			t.Errorf("same content reported as a change: %+v", ch)
		}
	})
	t.Run("before hash of a file a command wrote", func(t *testing.T) {
		s.sh(t, sb, "printf 'by command' > cmd.txt")
		ch := s.write(t, sb, "cmd.txt", "by tool")
		if ch.Before != sandbox.Hash([]byte("by command")) {
			t.Errorf("Before = %s, want the hash of %q", ch.Before, "by command")
		}
	})
}

func (s *suite) testBinary(t *testing.T) {
	sb := s.open(t)
	var data []byte
	for i := range 1024 {
		data = append(data, byte(i))
	}
	s.write(t, sb, "all-bytes.bin", string(data))
	got, err := sb.ReadFile(t.Context(), "all-bytes.bin")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("binary round trip: got %d bytes, want %d identical bytes", len(got), len(data))
	}
	if !sandbox.IsBinary(got) {
		t.Error("IsBinary = false for bytes 0..255")
	}
	if out := strings.TrimSpace(s.sh(t, sb, "wc -c < all-bytes.bin")); out != "1024" {
		t.Errorf("wc -c = %q: the command saw different bytes", out)
	}
	// A binary file made by a command reads back exactly.
	s.sh(t, sb, `printf '\000\001\002\377\376ELF' > made.bin`)
	got, err = sb.ReadFile(t.Context(), "made.bin")
	if want := []byte("\x00\x01\x02\xff\xfeELF"); err != nil || !bytes.Equal(got, want) {
		t.Errorf("ReadFile(made.bin) = %q, %v; want %q", got, err, want)
	}
	if !sandbox.IsBinary(got) {
		t.Error("IsBinary = false for a file with NUL bytes")
	}
	s.write(t, sb, "text.txt", "plain text ✓\n")
	if text, _ := sb.ReadFile(t.Context(), "text.txt"); sandbox.IsBinary(text) {
		t.Error("IsBinary = true for UTF-8 text")
	}
}

func (s *suite) testFileErrors(t *testing.T) {
	sb := s.open(t)
	s.write(t, sb, "dir/f.txt", "f")
	ctx := t.Context()

	_, err := sb.ReadFile(ctx, "missing.txt")
	wantErr(t, "read missing", err, sandbox.ErrNotFound, "missing.txt")
	wantErr(t, "read missing (fs.ErrNotExist)", err, fs.ErrNotExist, "missing.txt")
	_, err = sb.ReadFile(ctx, "dir/f.txt/below")
	wantErr(t, "read below a file", err, sandbox.ErrNotFound, "dir/f.txt/below")
	_, err = sb.ReadFile(ctx, "dir")
	wantErr(t, "read a directory", err, sandbox.ErrIsDir, "dir")
	_, err = sb.ReadFile(ctx, "")
	wantErr(t, "read the workspace", err, sandbox.ErrIsDir, "")
	_, err = sb.WriteFile(ctx, "dir", []byte("x"))
	wantErr(t, "write over a directory", err, sandbox.ErrIsDir, "dir")
	_, err = sb.WriteFile(ctx, ".", []byte("x"))
	wantErr(t, "write the workspace", err, sandbox.ErrIsDir, ".")
	_, err = sb.ReadFile(ctx, "bad\x00name")
	wantErr(t, "NUL in a path", err, sandbox.ErrInvalidPath, "bad\x00name")

	// A FIFO must be refused, not block the call forever.
	s.sh(t, sb, "mkfifo pipe")
	_, err = sb.ReadFile(ctx, "pipe")
	wantErr(t, "read a FIFO", err, sandbox.ErrNotRegular, "pipe")

	// Files over the read limit are refused, not loaded.
	s.sh(t, sb, fmt.Sprintf("head -c %d /dev/zero > big.bin", sandbox.DefaultMaxReadBytes+1))
	_, err = sb.ReadFile(ctx, "big.bin")
	wantErr(t, "read past the limit", err, sandbox.ErrTooLarge, "big.bin")
}

func (s *suite) testStat(t *testing.T) {
	sb := s.open(t)
	s.write(t, sb, "dir/f.txt", "12345")
	ctx := t.Context()
	fi, err := sb.Stat(ctx, "dir/f.txt")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Path != "dir/f.txt" || fi.Size != 5 || fi.IsDir() || !fi.Mode.IsRegular() || fi.ModTime.IsZero() {
		t.Errorf("Stat(file) = %+v", fi)
	}
	for _, p := range []string{"dir", "dir/", sb.Workdir() + "/dir"} {
		fi, err = sb.Stat(ctx, p)
		if err != nil || !fi.IsDir() || fi.Path != "dir" {
			t.Errorf("Stat(%q) = %+v, %v", p, fi, err)
		}
	}
	for _, p := range []string{"", ".", sb.Workdir()} {
		fi, err = sb.Stat(ctx, p)
		if err != nil || !fi.IsDir() || fi.Path != "." {
			t.Errorf("Stat(%q) = %+v, %v", p, fi, err)
		}
	}
	_, err = sb.Stat(ctx, "nope")
	wantErr(t, "stat missing", err, sandbox.ErrNotFound, "nope")
}

func paths(infos []sandbox.FileInfo) []string {
	var out []string
	for _, fi := range infos {
		out = append(out, fi.Path)
	}
	return out
}

func (s *suite) testList(t *testing.T) {
	sb := s.open(t)
	for _, p := range []string{"b.txt", "a.txt", "dir/z.txt", "dir/sub/c.txt", "dir/sub/deeper/d.txt"} {
		s.write(t, sb, p, p)
	}
	tests := []struct {
		path      string
		recursive bool
		want      []string
	}{
		{".", false, []string{"a.txt", "b.txt", "dir"}},
		{"", true, []string{"a.txt", "b.txt", "dir", "dir/sub", "dir/sub/c.txt", "dir/sub/deeper", "dir/sub/deeper/d.txt", "dir/z.txt"}},
		{"dir", false, []string{"dir/sub", "dir/z.txt"}},
		{"dir/sub", true, []string{"dir/sub/c.txt", "dir/sub/deeper", "dir/sub/deeper/d.txt"}},
		{sb.Workdir() + "/dir/sub/deeper", false, []string{"dir/sub/deeper/d.txt"}},
	}
	for _, tt := range tests {
		got, err := sb.List(t.Context(), tt.path, tt.recursive)
		if err != nil {
			t.Errorf("List(%q, %v): %v", tt.path, tt.recursive, err)
			continue
		}
		if !slices.Equal(paths(got), tt.want) {
			t.Errorf("List(%q, %v) = %q, want %q", tt.path, tt.recursive, paths(got), tt.want)
		}
		for _, fi := range got {
			if isDir := !strings.HasSuffix(fi.Path, ".txt"); fi.IsDir() != isDir {
				t.Errorf("List: %s IsDir = %v", fi.Path, fi.IsDir())
			}
			if !fi.IsDir() && fi.Size != int64(len(fi.Path)) {
				t.Errorf("List: %s Size = %d, want %d", fi.Path, fi.Size, len(fi.Path))
			}
		}
	}
	empty, err := sb.List(t.Context(), "dir/sub/deeper/../../sub/deeper/d.txt/..", false)
	if err != nil || len(empty) != 1 {
		t.Errorf("List of a cleaned path: %v, %v", paths(empty), err)
	}
	s.sh(t, sb, "mkdir void")
	empty, err = sb.List(t.Context(), "void", true)
	if err != nil || len(empty) != 0 {
		t.Errorf("List(empty dir) = %v, %v", paths(empty), err)
	}
	_, err = sb.List(t.Context(), "missing", false)
	wantErr(t, "list missing", err, sandbox.ErrNotFound, "missing")
	_, err = sb.List(t.Context(), "a.txt", false)
	wantErr(t, "list a file", err, sandbox.ErrNotDir, "a.txt")
}

func (s *suite) testRemove(t *testing.T) {
	sb := s.open(t)
	rm, ok := sb.(sandbox.Remover)
	if !ok {
		t.Skipf("%s sandboxes do not implement sandbox.Remover", s.b.Name())
	}
	ctx := t.Context()
	s.write(t, sb, "dir/gone.txt", "bye")
	ch, err := rm.Remove(ctx, "dir/gone.txt")
	if err != nil {
		t.Fatal(err)
	}
	if want := (sandbox.FileChange{Path: "dir/gone.txt", Before: sandbox.Hash([]byte("bye"))}); ch != want {
		t.Errorf("FileChange = %+v, want %+v", ch, want)
	}
	_, err = sb.ReadFile(ctx, "dir/gone.txt")
	wantErr(t, "read after remove", err, sandbox.ErrNotFound, "dir/gone.txt")
	_, err = rm.Remove(ctx, "dir/gone.txt")
	wantErr(t, "remove twice", err, sandbox.ErrNotFound, "dir/gone.txt")
	_, err = rm.Remove(ctx, "dir")
	wantErr(t, "remove a directory", err, sandbox.ErrIsDir, "dir")
	_, err = rm.Remove(ctx, "../x")
	wantErr(t, "remove outside", err, sandbox.ErrPathEscape, "../x")
	if _, err := sb.Stat(ctx, "dir"); err != nil {
		t.Errorf("the directory went away: %v", err)
	}
}
