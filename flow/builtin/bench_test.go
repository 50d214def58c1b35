package builtin_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gorath/rath/flow/builtin"
)

// BenchmarkShell measures run_shell_command on the local backend with and
// without file-change tracking, over workspaces of n files of 1 KiB: the
// cost of the two snapshots.
func BenchmarkShell(b *testing.B) {
	for _, n := range []int{0, 100, 1000} {
		for _, off := range []bool{true, false} {
			b.Run(fmt.Sprintf("files=%d/tracking=%v", n, !off), func(b *testing.B) {
				rt := MustOpen(b, nil)
				tools, err := builtin.NewWith(rt.Sandboxes(), builtin.Options{Tracking: builtin.Tracking{Off: off}}, "run_shell_command")
				if err != nil {
					b.Fatal(err)
				}
				dir := b.TempDir()
				files := map[string]string{}
				for i := range n {
					files[fmt.Sprintf("d%02d/f%04d.txt", i%10, i)] = strings.Repeat("x", 1024)
				}
				writeFiles(b, dir, files)
				s, err := rt.NewUserSession(b.Context(), "bench")
				if err != nil {
					b.Fatal(err)
				}
				if s, err = s.To(b.Context(), "local", dir); err != nil {
					b.Fatal(err)
				}
				args := json.RawMessage(`{"cmd":"echo x > out.txt"}`)
				b.ResetTimer()
				for b.Loop() {
					if _, err := tools[0].Call(b.Context(), s, args); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
