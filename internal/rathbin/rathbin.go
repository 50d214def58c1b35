package rathbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
