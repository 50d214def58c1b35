package rath_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/sandbox"
)

func TestRuntime_PlacementResolvesByName(t *testing.T) {
	ctx := context.Background()
	rt, err := rath.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	s, _ := rt.NewUserSession(ctx, "x")
	_, err = s.To(ctx, "quantum", "/w")
	if !errors.Is(err, sandbox.ErrUnknownBackend) || !strings.Contains(err.Error(), "bwrap, local, opensandbox") {
		t.Fatalf("err = %v, want an unknown-backend error listing the backends", err)
	}
	work := t.TempDir()
	placed, err := s.To(ctx, "local", work)
	if err != nil {
		t.Fatal(err)
	}
	fork, _ := placed.Fork(ctx)
	a, err := rt.Sandbox(ctx, placed)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rt.Sandbox(ctx, fork)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID() != b.ID() {
		t.Fatalf("derived sessions got different sandboxes: %s, %s", a.ID(), b.ID())
	}
	if _, err := rt.Sandbox(ctx, s); !errors.Is(err, sandbox.ErrNoPlacement) {
		t.Fatalf("unplaced session: err = %v", err)
	}
}
