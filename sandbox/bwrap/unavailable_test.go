package bwrap_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/sandbox/bwrap"
)

// These run everywhere: they need no working bubblewrap.

func TestBackend_MissingBinary(t *testing.T) {
	b := &bwrap.Backend{Binary: filepath.Join(t.TempDir(), "no-bwrap-here")}
	_, err := b.Open(t.Context(), t.TempDir())
	if !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("Open = %v, want ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Errorf("the message does not say how to fix it: %v", err)
	}
}

func TestBackend_BrokenBinary(t *testing.T) {
	// A stand-in that fails the way bwrap does without user namespaces.
	fake := filepath.Join(t.TempDir(), "bwrap")
	script := "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	b := &bwrap.Backend{Binary: fake}
	_, err := b.Open(t.Context(), t.TempDir())
	if !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("Open = %v, want ErrUnavailable", err)
	}
	for _, want := range []string{"No permissions to creating new namespace", "user namespaces"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q: %v", want, err)
		}
	}
}

func TestBackend_Capabilities(t *testing.T) {
	if c := (&bwrap.Backend{}).Capabilities(); !c.Isolated || c.Network || !c.ConfinedSymlinks || !c.Stdin {
		t.Errorf("default capabilities %+v", c)
	}
	if c := (&bwrap.Backend{Network: true}).Capabilities(); !c.Network {
		t.Errorf("Network option not reflected: %+v", c)
	}
}
