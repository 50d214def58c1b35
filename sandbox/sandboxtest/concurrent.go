package sandboxtest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/gorath/rath/sandbox"
)

func (s *suite) testConcurrent(t *testing.T) {
	sb := s.open(t)
	const n = 16
	type result struct {
		stdout string
		read   string
		err    error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			name := fmt.Sprintf("f%02d.txt", i)
			content := fmt.Sprintf("content %d\n", i)
			if _, err := sb.WriteFile(t.Context(), name, []byte(content)); err != nil {
				results[i].err = err
				return
			}
			// Sleep a varying time so calls finish out of start order.
			res, err := sb.Exec(t.Context(), sandbox.ExecRequest{
				Command: fmt.Sprintf("sleep 0.%d; cat %s; echo call %d; echo err %d >&2", (n-i)%5, name, i, i),
			})
			if err != nil {
				results[i].err = err
				return
			}
			if got, want := string(res.Stderr), fmt.Sprintf("err %d\n", i); got != want {
				results[i].err = fmt.Errorf("stderr %q, want %q", got, want)
				return
			}
			data, err := sb.ReadFile(t.Context(), name)
			results[i] = result{stdout: string(res.Stdout), read: string(data), err: err}
		})
	}
	wg.Wait()
	for i, r := range results {
		if r.err != nil {
			t.Errorf("call %d: %v", i, r.err)
			continue
		}
		if want := fmt.Sprintf("content %d\ncall %d\n", i, i); r.stdout != want {
			t.Errorf("call %d: stdout %q, want %q", i, r.stdout, want)
		}
		if want := fmt.Sprintf("content %d\n", i); r.read != want {
			t.Errorf("call %d: read %q, want %q", i, r.read, want)
		}
	}
}
