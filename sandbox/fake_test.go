package sandbox_test

import (
	"context"
	"errors"
	"sync"

	"github.com/gorath/rath/sandbox"
)

// fakeBackend's behaviour comes from its open field; it counts Opens.
type fakeBackend struct {
	name string
	open func(ctx context.Context, spec string) (sandbox.Sandbox, error)

	mu    sync.Mutex
	opens int
}

func (b *fakeBackend) Name() string                       { return b.name }
func (b *fakeBackend) Capabilities() sandbox.Capabilities { return sandbox.Capabilities{} }
func (b *fakeBackend) Open(ctx context.Context, spec string) (sandbox.Sandbox, error) {
	b.mu.Lock()
	b.opens++
	b.mu.Unlock()
	if b.open != nil {
		return b.open(ctx, spec)
	}
	return &fakeSandbox{id: b.name + ":" + spec}, nil
}

func (b *fakeBackend) Opens() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.opens
}

// fakeSandbox records Close; everything else is out of scope for the
// registry and pool tests.
type fakeSandbox struct {
	id       string
	closeErr error

	mu     sync.Mutex
	closes int
}

var errFake = errors.New("fake: not implemented")

func (s *fakeSandbox) ID() string      { return s.id }
func (s *fakeSandbox) Workdir() string { return "/fake" }
func (s *fakeSandbox) Exec(context.Context, sandbox.ExecRequest) (sandbox.ExecResult, error) {
	return sandbox.ExecResult{}, errFake
}
func (s *fakeSandbox) ReadFile(context.Context, string) ([]byte, error) { return nil, errFake }
func (s *fakeSandbox) WriteFile(context.Context, string, []byte) (sandbox.FileChange, error) {
	return sandbox.FileChange{}, errFake
}
func (s *fakeSandbox) List(context.Context, string, bool) ([]sandbox.FileInfo, error) {
	return nil, errFake
}
func (s *fakeSandbox) Stat(context.Context, string) (sandbox.FileInfo, error) {
	return sandbox.FileInfo{}, errFake
}
func (s *fakeSandbox) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closes++
	return s.closeErr
}

func (s *fakeSandbox) Closes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closes
}
