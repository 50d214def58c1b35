package memory_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/memory"
)

// textGen makes deterministic English-like text: words built from
// syllables, drawn from a Zipf distribution like real vocabulary.
type textGen struct {
	r     *rand.Rand
	z     *rand.Zipf
	words []string
}

var syllables = strings.Fields("ka lo mi ter san vel dor pra ni qu es tal mon ber gi ru fe chan os lin")

func newTextGen(seed uint64) *textGen {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	words := make([]string, 8000)
	vr := rand.New(rand.NewPCG(42, 42)) // the vocabulary is the same for every seed
	for i := range words {
		var b strings.Builder
		for range 2 + vr.IntN(3) {
			b.WriteString(syllables[vr.IntN(len(syllables))])
		}
		words[i] = b.String()
	}
	return &textGen{r: r, z: rand.NewZipf(r, 1.07, 2, uint64(len(words)-1)), words: words}
}

// text returns about size bytes of words.
func (g *textGen) text(size int) string {
	var b strings.Builder
	for b.Len() < size {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(g.words[g.z.Uint64()])
	}
	return b.String()
}

// query returns two or three words of middling frequency.
func (g *textGen) query() string { return g.queryRanks(20, 420) }

// queryRanks returns two or three words whose frequency ranks are in
// [lo, hi).
func (g *textGen) queryRanks(lo, hi int) string {
	n := 2 + g.r.IntN(2)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = g.words[lo+g.r.IntN(hi-lo)]
	}
	return strings.Join(parts, " ")
}

// bulkRemember appends n memory.remembered events of about size bytes,
// spread over namespaces, in large atomic writes: much faster than n
// Remember calls, and the same events. Every forgetEvery-th memory (if
// > 0) is forgotten a little later in the log.
func bulkRemember(tb testing.TB, store *eventlog.Store, namespaces []string, n, size, forgetEvery int, g *textGen) {
	tb.Helper()
	ctx := context.Background()
	versions := map[string]int64{}
	for _, ns := range namespaces {
		v, err := store.StreamVersion(ctx, events.MemoryStream(ns))
		if err != nil {
			tb.Fatal(err)
		}
		versions[ns] = v
	}
	const chunk = 2000
	for start := 0; start < n; start += chunk {
		pending := map[string][]events.Payload{}
		var order []string
		for i := start; i < min(n, start+chunk); i++ {
			ns := namespaces[i%len(namespaces)]
			if len(pending[ns]) == 0 {
				order = append(order, ns)
			}
			v := versions[ns] + int64(len(pending[ns])) + 1
			id := memory.DeriveID(ns, v)
			pending[ns] = append(pending[ns], events.MemoryRemembered{Namespace: ns, ID: id, Text: g.text(size)})
			if forgetEvery > 0 && i%forgetEvery == forgetEvery-1 {
				pending[ns] = append(pending[ns], events.MemoryForgotten{Namespace: ns, ID: id})
			}
		}
		writes := make([]eventlog.Write, 0, len(order))
		for _, ns := range order {
			writes = append(writes, eventlog.Write{Stream: events.MemoryStream(ns), Expected: versions[ns], Events: pending[ns]})
			versions[ns] += int64(len(pending[ns]))
		}
		if _, err := store.AppendWrites(ctx, writes...); err != nil {
			tb.Fatal(err)
		}
	}
}
