package sandboxtest

import (
	"errors"
	"io/fs"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/gorath/rath/sandbox"
)

// Options configure a run of the suite.
type Options struct {
	// Spec returns the spec of a fresh, empty sandbox; it is called once
	// per subtest (typically returning a new t.TempDir()). Required.
	Spec func(t testing.TB) string
	// Caps are the capabilities to check. Pass backend.Capabilities(),
	// minus anything a test double cannot provide (a fake server running
	// on the host is not Isolated). A capability that is set is verified,
	// not trusted: Isolated runs a host-file and host-process probe,
	// Network false runs a connection probe that must fail.
	Caps sandbox.Capabilities
	// BigOutput is the size of the output produced by the memory-bound
	// test. Zero means 100 MB.
	BigOutput int64
}

// Run runs the conformance suite against b, one subtest per behaviour.
// Subtests run one after another: the memory test needs a quiet heap.
func Run(t *testing.T, b sandbox.Backend, opts Options) {
	t.Helper()
	if opts.Spec == nil {
		t.Fatal("sandboxtest: Options.Spec is required")
	}
	if opts.BigOutput == 0 {
		opts.BigOutput = 100 << 20
	}
	s := &suite{b: b, opts: opts, caps: opts.Caps}
	groups := []struct {
		name string
		fn   func(*testing.T)
	}{
		{"Identity", s.testIdentity},
		{"Exec", s.testExec},
		{"ExecDir", s.testExecDir},
		{"Env", s.testEnv},
		{"Stdin", s.testStdin},
		{"Timeout", s.testTimeout},
		{"RunawayKilled", s.testRunaway},
		{"ForkTreeKilled", s.testForkTree},
		{"Cancel", s.testCancel},
		{"OutputCap", s.testOutputCap},
		{"BigOutputBoundedMemory", s.testBigOutput},
		{"WriteRead", s.testWriteRead},
		{"Binary", s.testBinary},
		{"FileErrors", s.testFileErrors},
		{"Stat", s.testStat},
		{"List", s.testList},
		{"Walk", s.testWalk},
		{"Remove", s.testRemove},
		{"PathEscape", s.testPathEscape},
		{"SymlinkEscape", s.testSymlinkEscape},
		{"Concurrent", s.testConcurrent},
		{"Isolation", s.testIsolation},
		{"Descriptors", s.testDescriptors},
		{"Network", s.testNetwork},
		{"Close", s.testClose},
	}
	for _, g := range groups {
		t.Run(g.name, g.fn)
	}
}

type suite struct {
	b    sandbox.Backend
	opts Options
	caps sandbox.Capabilities
}

// open opens a fresh sandbox closed at the end of the test.
func (s *suite) open(t *testing.T) sandbox.Sandbox {
	t.Helper()
	sb, err := s.b.Open(t.Context(), s.opts.Spec(t))
	if err != nil {
		t.Fatalf("open %s sandbox: %v", s.b.Name(), err)
	}
	t.Cleanup(func() {
		if err := sb.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return sb
}

// exec runs a command that must not fail as a call (its exit code is
// returned in the result, not checked).
func (s *suite) exec(t *testing.T, sb sandbox.Sandbox, req sandbox.ExecRequest) sandbox.ExecResult {
	t.Helper()
	res, err := sb.Exec(t.Context(), req)
	if err != nil {
		t.Fatalf("exec %q: %v (stderr %q)", req.Command, err, res.Stderr)
	}
	return res
}

// sh runs a command that must exit 0 and returns its stdout.
func (s *suite) sh(t *testing.T, sb sandbox.Sandbox, command string) string {
	t.Helper()
	res := s.exec(t, sb, sandbox.ExecRequest{Command: command})
	if res.ExitCode != 0 {
		t.Fatalf("exec %q: exit %d, stderr %q", command, res.ExitCode, res.Stderr)
	}
	return string(res.Stdout)
}

func (s *suite) write(t *testing.T, sb sandbox.Sandbox, p, content string) sandbox.FileChange {
	t.Helper()
	ch, err := sb.WriteFile(t.Context(), p, []byte(content))
	if err != nil {
		t.Fatalf("write %s: %v", p, err)
	}
	return ch
}

// wantErr checks that err matches target and, for path errors, is an
// *fs.PathError naming path.
func wantErr(t *testing.T, what string, err, target error, path string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want %v", what, err, target)
		return
	}
	if path == "" {
		return
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		t.Errorf("%s: error %v (%T) is not an *fs.PathError", what, err, err)
		return
	}
	if pe.Path != path {
		t.Errorf("%s: PathError.Path = %q, want %q", what, pe.Path, path)
	}
}

// heapSampler records the peak of live heap objects while it runs. It reads
// runtime/metrics, which does not stop the world, every few milliseconds.
type heapSampler struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	peak uint64
}

const heapMetric = "/memory/classes/heap/objects:bytes"

func heapNow() uint64 {
	sample := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}

func startHeapSampler() *heapSampler {
	h := &heapSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			v := heapNow()
			h.mu.Lock()
			h.peak = max(h.peak, v)
			h.mu.Unlock()
			select {
			case <-h.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return h
}

// Peak stops the sampler and returns the highest value seen.
func (h *heapSampler) Peak() uint64 {
	close(h.stop)
	<-h.done
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.peak
}
