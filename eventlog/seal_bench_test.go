package eventlog_test

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/keyring"
)

// BenchmarkAppend_Sealed compares, in one run, appends of typical chunks
// from 16 goroutines into a store that seals them under their subject's
// key (one subject per goroutine's run) with the same appends into a
// store that does not. Compare the two ns/op.
func BenchmarkAppend_Sealed(b *testing.B) {
	kekFile := filepath.Join(b.TempDir(), "kek")
	if err := keyring.GenerateKEKFile(kekFile); err != nil {
		b.Fatal(err)
	}
	kek, err := keyring.LoadKEKFile(kekFile)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		sealer eventlog.Sealer
	}{{"unsealed", nil}, {"sealed", keyring.New(kek, nil)}} {
		b.Run(tc.name, func(b *testing.B) {
			s := MustOpenStore(b, eventlog.Options{Sealer: tc.sealer, Synchronous: "NORMAL"})
			var g atomic.Int64
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				stream := fmt.Sprintf("g%d", g.Add(1))
				ctx := b.Context()
				for i := 0; pb.Next(); i++ {
					if _, err := s.Append(ctx, stream, eventlog.AnyVersion, benchPayload(stream, i)); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
