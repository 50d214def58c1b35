package eventlog_test

import (
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/internal/storetest"
	"github.com/gorath/rath/keyring"
	"github.com/gorath/rath/keyring/keyringtest"
)

// BenchmarkAppend_Sealed compares, in one run, appends of typical chunks
// from 16 goroutines into a store that seals them under their subject's
// key (one subject per goroutine) with the same appends into a store that
// does not, and with appends of chunks as long as the sealed ones into a
// third, in rotating rounds (storetest.CompareSealedAppends): its
// sealed/plain metric is what sealing costs, padded/plain what the same
// bytes cost in clear.
func BenchmarkAppend_Sealed(b *testing.B) {
	kek := keyringtest.KEK(b)
	plain := MustOpenStore(b, eventlog.Options{Synchronous: "NORMAL"})
	sealed := MustOpenStore(b, eventlog.Options{Sealer: keyring.New(kek, nil), Synchronous: "NORMAL"})
	padded := MustOpenStore(b, eventlog.Options{Synchronous: "NORMAL"})
	storetest.CompareSealedAppends(b, plain, sealed, padded, nil)
}
