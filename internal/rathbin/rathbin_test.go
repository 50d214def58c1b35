package rathbin_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gorath/rath/internal/rathbin"
)

func TestBuild_UsesTheNamedBinaryAndRefusesADirectory(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "rath")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(rathbin.Env, bin)
	if p, _, err := rathbin.Build(t.TempDir()); err != nil || p != bin {
		t.Fatalf("Build = %q, %v; want %q", p, err, bin)
	}
	t.Setenv(rathbin.Env, dir)
	if _, _, err := rathbin.Build(t.TempDir()); err == nil {
		t.Fatal("a directory named as the binary was accepted")
	}
}
