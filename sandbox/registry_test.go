package sandbox_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gorath/rath/sandbox"
)

func TestRegistry_LookupAndNames(t *testing.T) {
	var r sandbox.Registry // the zero value is usable
	if names := r.Names(); len(names) != 0 {
		t.Fatalf("empty registry names = %v", names)
	}
	_, err := r.Lookup("local")
	var ube *sandbox.UnknownBackendError
	if !errors.As(err, &ube) || !errors.Is(err, sandbox.ErrUnknownBackend) || ube.Name != "local" || len(ube.Known) != 0 {
		t.Fatalf("lookup in empty registry: %v", err)
	}
	if !strings.Contains(err.Error(), "registered: none") {
		t.Errorf("message %q", err)
	}

	for _, name := range []string{"opensandbox", "local", "bwrap"} {
		r.Register(&fakeBackend{name: name})
	}
	if got, want := r.Names(), []string{"bwrap", "local", "opensandbox"}; !slices.Equal(got, want) {
		t.Errorf("Names = %v, want %v", got, want)
	}
	b, err := r.Lookup("bwrap")
	if err != nil || b.Name() != "bwrap" {
		t.Errorf("Lookup(bwrap) = %v, %v", b, err)
	}
	_, err = r.Lookup("docker")
	if !errors.As(err, &ube) || !slices.Equal(ube.Known, []string{"bwrap", "local", "opensandbox"}) {
		t.Fatalf("Lookup(docker) = %v", err)
	}
	if got, want := err.Error(), `sandbox: unknown backend "docker" (registered: bwrap, local, opensandbox)`; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
}

func TestRegistry_RegisterPanics(t *testing.T) {
	tests := []struct {
		name string
		b    sandbox.Backend
	}{
		{"duplicate", &fakeBackend{name: "local"}},
		{"empty name", &fakeBackend{name: ""}},
		{"nil", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sandbox.NewRegistry(&fakeBackend{name: "local"})
			defer func() {
				if recover() == nil {
					t.Error("Register did not panic")
				}
			}()
			r.Register(tt.b)
		})
	}
}

func TestRegistry_Open(t *testing.T) {
	r := sandbox.NewRegistry(&fakeBackend{name: "fake"})
	sb, err := r.Open(t.Context(), "fake", "spec")
	if err != nil || sb.ID() != "fake:spec" {
		t.Fatalf("Open = %v, %v", sb, err)
	}
	sb.Close()
	if _, err := r.Open(t.Context(), "nope", "x"); !errors.Is(err, sandbox.ErrUnknownBackend) {
		t.Errorf("Open(nope) = %v", err)
	}
	failing := sandbox.NewRegistry(&fakeBackend{name: "bad", open: func(_ context.Context, spec string) (sandbox.Sandbox, error) {
		return nil, sandbox.ErrUnavailable
	}})
	if _, err := failing.Open(t.Context(), "bad", "x"); !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), `open bad sandbox "x"`) {
		t.Errorf("failing Open = %v", err)
	}
}
