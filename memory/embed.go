package memory

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
)

// Embedder turns texts into embedding vectors, one per text, in order.
// Package memory/openaiembed provides one for OpenAI-compatible endpoints.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// maxEmbedCache bounds the cached memory embeddings; the cache is cleared
// when it grows past this.
const maxEmbedCache = 1 << 15

// embedCache keeps the embeddings of memories, by id: a memory's text
// never changes, so neither does its vector.
type embedCache struct {
	mu sync.Mutex // protects m
	m  map[string][]float32
}

func (c *embedCache) get(id string) ([]float32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[id]
	return v, ok
}

func (c *embedCache) put(id string, v []float32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxEmbedCache {
		c.m = map[string][]float32{}
	}
	c.m[id] = v
}

// rerank orders hits by the cosine similarity of their embeddings to the
// query's, which becomes their score; ties keep id order. The query and
// the memories not cached yet are embedded in one call.
func (l *Local) rerank(ctx context.Context, q string, hits []Hit) ([]Hit, error) {
	if len(hits) == 0 {
		return hits, nil
	}
	texts := []string{q}
	var missing []int
	vecs := make([][]float32, len(hits))
	for i, h := range hits {
		if v, ok := l.embeds.get(h.ID); ok {
			vecs[i] = v
			continue
		}
		missing = append(missing, i)
		texts = append(texts, h.Text)
	}
	got, err := l.opts.Embedder.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("embed: %w", err)
	}
	if len(got) != len(texts) {
		return nil, fmt.Errorf("embed: %d texts gave %d vectors", len(texts), len(got))
	}
	for j, i := range missing {
		vecs[i] = got[j+1]
		l.embeds.put(hits[i].ID, got[j+1])
	}
	out := slices.Clone(hits)
	for i := range out {
		out[i].Score = cosine(got[0], vecs[i])
	}
	slices.SortStableFunc(out, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out, nil
}

// cosine returns the cosine similarity of a and b, 0 if either is zero or
// their lengths differ.
func cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb))
}
