package eventlog

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/gorath/rath/events"
)

// A long Scan (a rebuild, a replay, an export) reads the log a page at a
// time. Each page costs one round trip for its rows and at most one more
// for the blobs its payloads point to, and the next page is read while
// the caller works through this one: on PostgreSQL the server's part and
// the wire overlap the caller's decoding instead of adding to it.

// page is a run of events in seq order; err, if set, belongs after them
// (the row that failed and the scan's end).
type page struct {
	evs  []events.Event
	last int64 // the seq of the page's last row read
	full bool  // the page had as many rows as asked: there may be more
	err  error
}

// pages yields q's events a page at a time. After the first full page it
// reads ahead on another goroutine, one page ahead of the caller; that
// goroutine has ended by the time pages returns.
func (s *Store) pages(ctx context.Context, q Query) iter.Seq[page] {
	return func(yield func(page) bool) {
		after := max(q.FromSeq-1, 0)
		left := q.Limit
		// size is the next page's size, or 0 once the query is done.
		size := func(left int) int {
			if q.Limit > 0 {
				return min(left, scanPage)
			}
			return scanPage
		}
		n := size(left)
		if n == 0 {
			return
		}
		p := s.page(ctx, q, after, n)
		if !yield(p) || p.err != nil || !p.full {
			return
		}
		after, left = p.last, left-n
		if size(left) == 0 {
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		ahead := make(chan page, 1)
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()
		wg.Go(func() {
			defer close(ahead)
			for n := size(left); n > 0; n = size(left) {
				p := s.page(ctx, q, after, n)
				select {
				case ahead <- p:
				case <-ctx.Done():
					return
				}
				if p.err != nil || !p.full {
					return
				}
				after, left = p.last, left-n
			}
		})
		for p := range ahead {
			if !yield(p) {
				return
			}
		}
	}
}

// page reads up to n events of q after seq `after`, their blobs with
// them.
func (s *Store) page(ctx context.Context, q Query, after int64, n int) page {
	rs, err := s.rows(ctx, q, after, n)
	if err != nil {
		return page{err: err}
	}
	p := page{evs: make([]events.Event, 0, len(rs)), full: len(rs) == n}
	if len(rs) > 0 {
		p.last = rs[len(rs)-1].Seq
	}
	blobs, err := s.pageBlobs(ctx, rs)
	if err != nil {
		p.err = err
		return p
	}
	for _, r := range rs {
		ev, err := s.toEventWith(ctx, r, blobs)
		if err != nil {
			p.err = err
			return p
		}
		p.evs = append(p.evs, ev)
	}
	return p
}

// pageBlobs reads, in one query, the blobs that rows' payloads point to,
// by hash, as stored. A pointer that does not parse, or a blob that is
// missing, is left out: converting its row reports it.
func (s *Store) pageBlobs(ctx context.Context, rs []row) (map[string][]byte, error) {
	want := map[string]bool{}
	for _, r := range rs {
		if hash, ok, err := StoredInBlob([]byte(r.Payload)); ok && err == nil {
			want[hash] = true
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	hashes := slices.Sorted(maps.Keys(want))
	args := make([]any, len(hashes))
	for i, h := range hashes {
		args[i] = h
	}
	q := s.rebind(`SELECT hash, bytes FROM blobs WHERE hash IN (?` + strings.Repeat(", ?", len(hashes)-1) + `)`)
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("eventlog: read blobs: %w", err)
	}
	defer rows.Close()
	out := make(map[string][]byte, len(hashes))
	for rows.Next() {
		var h string
		var b []byte
		if err := rows.Scan(&h, &b); err != nil {
			return nil, fmt.Errorf("eventlog: read blobs: %w", err)
		}
		out[h] = b
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("eventlog: read blobs: %w", err)
	}
	return out, nil
}
