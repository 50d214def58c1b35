package sandbox_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/sandbox"
)

func TestPool_SharesOneSandboxPerPlacement(t *testing.T) {
	local := &fakeBackend{name: "local"}
	bwrap := &fakeBackend{name: "bwrap"}
	pool := sandbox.NewPool(sandbox.NewRegistry(local, bwrap))
	defer pool.Close()
	ctx := t.Context()

	a := events.Placement{Backend: "local", Spec: "/w1"}
	sb1, err := pool.Get(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	sb2, err := pool.Get(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if sb1 != sb2 || local.Opens() != 1 {
		t.Errorf("same placement: %p vs %p, %d opens", sb1, sb2, local.Opens())
	}
	other, _ := pool.Get(ctx, events.Placement{Backend: "local", Spec: "/w2"})
	onBwrap, _ := pool.Get(ctx, events.Placement{Backend: "bwrap", Spec: "/w1"})
	if other == sb1 || onBwrap == sb1 || local.Opens() != 2 || bwrap.Opens() != 1 {
		t.Errorf("different placements share a sandbox (opens local %d bwrap %d)", local.Opens(), bwrap.Opens())
	}
	want := []events.Placement{{Backend: "bwrap", Spec: "/w1"}, {Backend: "local", Spec: "/w1"}, {Backend: "local", Spec: "/w2"}}
	if got := pool.Placements(); !slices.Equal(got, want) {
		t.Errorf("Placements = %v, want %v", got, want)
	}
}

func TestPool_ConcurrentFirstGetOpensOnce(t *testing.T) {
	gate := make(chan struct{})
	b := &fakeBackend{name: "slow", open: func(_ context.Context, spec string) (sandbox.Sandbox, error) {
		<-gate
		return &fakeSandbox{id: spec}, nil
	}}
	pool := sandbox.NewPool(sandbox.NewRegistry(b))
	defer pool.Close()
	const n = 20
	got := make([]sandbox.Sandbox, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sb, err := pool.Get(t.Context(), events.Placement{Backend: "slow", Spec: "x"})
			if err != nil {
				t.Error(err)
			}
			got[i] = sb
		})
	}
	close(gate)
	wg.Wait()
	if b.Opens() != 1 {
		t.Errorf("%d opens for one placement", b.Opens())
	}
	for i := range got {
		if got[i] != got[0] {
			t.Fatalf("caller %d got a different sandbox", i)
		}
	}
}

func TestPool_FailedOpenIsRetried(t *testing.T) {
	fail := true
	b := &fakeBackend{name: "flaky", open: func(_ context.Context, spec string) (sandbox.Sandbox, error) {
		if fail {
			return nil, sandbox.ErrUnavailable
		}
		return &fakeSandbox{id: spec}, nil
	}}
	pool := sandbox.NewPool(sandbox.NewRegistry(b))
	defer pool.Close()
	pl := events.Placement{Backend: "flaky", Spec: "x"}
	if _, err := pool.Get(t.Context(), pl); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("first Get = %v", err)
	}
	if len(pool.Placements()) != 0 {
		t.Errorf("a failed open is listed: %v", pool.Placements())
	}
	fail = false
	if sb, err := pool.Get(t.Context(), pl); err != nil || sb.ID() != "x" {
		t.Fatalf("retry = %v, %v", sb, err)
	}
	if b.Opens() != 2 {
		t.Errorf("opens = %d, want 2", b.Opens())
	}
}

func TestPool_Errors(t *testing.T) {
	pool := sandbox.NewPool(sandbox.NewRegistry(&fakeBackend{name: "local"}))
	_, err := pool.Get(t.Context(), events.Placement{})
	if !errors.Is(err, sandbox.ErrNoPlacement) {
		t.Errorf("empty placement: %v", err)
	}
	_, err = pool.Get(t.Context(), events.Placement{Backend: "docker", Spec: "x"})
	var ube *sandbox.UnknownBackendError
	if !errors.As(err, &ube) || !slices.Equal(ube.Known, []string{"local"}) {
		t.Errorf("unknown backend: %v", err)
	}
	pool.Close()
	_, err = pool.Get(t.Context(), events.Placement{Backend: "local", Spec: "x"})
	if !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("Get after Close: %v", err)
	}
}

func TestPool_WaiterHonoursContext(t *testing.T) {
	gate := make(chan struct{})
	defer close(gate)
	entered := make(chan struct{})
	b := &fakeBackend{name: "slow", open: func(context.Context, string) (sandbox.Sandbox, error) {
		close(entered)
		<-gate
		return &fakeSandbox{}, nil
	}}
	pool := sandbox.NewPool(sandbox.NewRegistry(b))
	pl := events.Placement{Backend: "slow", Spec: "x"}
	go pool.Get(context.Background(), pl)
	<-entered // the first caller is inside Open
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := pool.Get(ctx, pl); !errors.Is(err, context.Canceled) {
		t.Errorf("waiting Get on a cancelled context: %v", err)
	}
}

func TestPool_CloseClosesEverySandbox(t *testing.T) {
	var opened []*fakeSandbox
	var mu sync.Mutex
	b := &fakeBackend{name: "fake", open: func(_ context.Context, spec string) (sandbox.Sandbox, error) {
		sb := &fakeSandbox{id: spec}
		if spec == "bad" {
			sb.closeErr = errors.New("close failed")
		}
		mu.Lock()
		opened = append(opened, sb)
		mu.Unlock()
		return sb, nil
	}}
	pool := sandbox.NewPool(sandbox.NewRegistry(b))
	for _, spec := range []string{"a", "bad", "c"} {
		if _, err := pool.Get(t.Context(), events.Placement{Backend: "fake", Spec: spec}); err != nil {
			t.Fatal(err)
		}
	}
	err := pool.Close()
	if err == nil || err.Error() != `close fake sandbox "bad": close failed` {
		t.Errorf("Close = %v", err)
	}
	for _, sb := range opened {
		if sb.Closes() != 1 {
			t.Errorf("sandbox %s closed %d times", sb.id, sb.Closes())
		}
	}
	if err := pool.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	for _, sb := range opened {
		if sb.Closes() != 1 {
			t.Errorf("second Close closed %s again", sb.id)
		}
	}
}
