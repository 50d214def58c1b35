package rathbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Env names a rath binary built from this tree for tests to use.
const Env = "RATH_TEST_BINARY"

// Build returns the path of a rath binary: $RATH_TEST_BINARY when set
// (it must be a file), else dir/rath, built there with go build. out is
// the build's output, for the test's failure message.
func Build(dir string) (path string, out []byte, err error) {
	if p := os.Getenv(Env); p != "" {
		st, err := os.Stat(p)
		if err != nil || st.IsDir() {
			return "", nil, fmt.Errorf("%s=%s: not a rath binary (%v)", Env, p, err)
		}
		return p, nil, nil
	}
	path = filepath.Join(dir, "rath")
	out, err = exec.Command("go", "build", "-o", path, "github.com/gorath/rath/cmd/rath").CombinedOutput()
	return path, out, err
}

// Shared is a package's rath binary, built on first use by any of its
// tests: declare one as a package variable, call Path from the tests and
// Remove from TestMain (a binary this built is 85 MB in the temporary
// directory).
type Shared struct {
	once sync.Once
	dir  string
	path string
	out  []byte
	err  error
}

// Path returns the binary's path, building it the first time; a failed
// build fails tb with the build's output.
func (s *Shared) Path(tb testing.TB) string {
	tb.Helper()
	s.once.Do(func() {
		if s.dir, s.err = os.MkdirTemp("", "rath-bin-"); s.err != nil {
			return
		}
		s.path, s.out, s.err = Build(s.dir)
	})
	if s.err != nil {
		tb.Fatalf("build cmd/rath: %v\n%s", s.err, s.out)
	}
	return s.path
}

// Remove deletes what Path built, if anything.
func (s *Shared) Remove() {
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}
