package sandboxtest

import (
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/gorath/rath/sandbox"
)

// testDescriptors: a command gets stdin, stdout and stderr and nothing
// else. The test process holds a descriptor on "/" opened without
// O_CLOEXEC, as a shell's "exec 7</" hands one to every program it starts;
// a command that inherited it could read and write the whole host through
// /proc/self/fd/N, whatever the sandbox's mounts.
func (s *suite) testDescriptors(t *testing.T) {
	fd, err := syscall.Open("/", syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	sb := s.open(t)
	// ls reads the shell's descriptors, not its own; "; true" keeps the
	// shell from exec'ing ls in its place.
	out := s.sh(t, sb, "ls /proc/$$/fd; true")
	if got := strings.Fields(out); strings.Join(got, " ") != "0 1 2" {
		t.Errorf("the command's descriptors are %q, want 0 1 2", got)
	}
	res := s.exec(t, sb, sandbox.ExecRequest{Command: fmt.Sprintf("ls /proc/self/fd/%d/ 2>&1", fd)})
	if res.ExitCode == 0 {
		t.Errorf("the inherited descriptor %d lists the host root: %q", fd, res.Stdout)
	}
}
