package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// row is one event as stored, for the raw baseline and the gaps.
type row struct {
	seq, version         int64
	stream, typ, run     string
	payload, hash        string
	at                   time.Time
	delivered            time.Time // by the subscriber
	finishedOK, finished bool
}

// subscriber collects the log's events from a seq on, and each one's lag
// from its timestamp to its delivery.
type subscriber struct {
	finished chan time.Time
	cancel   context.CancelFunc
	done     chan struct{}
	mu       sync.Mutex
	rows     []row
	lags     []time.Duration
	why      string // the first failed run's run.finished
}

func subscribe(ctx context.Context, store *eventlog.Store, from int64, runs int) *subscriber {
	ctx, cancel := context.WithCancel(ctx)
	s := &subscriber{finished: make(chan time.Time, 1), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		n := 0
		for ev, err := range store.Subscribe(ctx, eventlog.Query{FromSeq: from}) {
			if err != nil {
				return
			}
			now := time.Now()
			r := row{seq: ev.Seq, version: ev.Version, stream: ev.Stream, typ: ev.Type, run: ev.RunID, payload: string(ev.Payload), hash: ev.Hash, at: ev.At, delivered: now}
			if ev.Type == events.TypeRunFinished {
				var p struct {
					Status string `json:"status"`
				}
				json.Unmarshal(ev.Payload, &p)
				r.finished, r.finishedOK = true, p.Status == "ok"
				if !r.finishedOK && s.why == "" {
					s.why = string(ev.Payload)
				}
			}
			s.mu.Lock()
			s.rows = append(s.rows, r)
			s.lags = append(s.lags, now.Sub(ev.At))
			s.mu.Unlock()
			if r.finished {
				if n++; n == runs {
					s.finished <- now
				}
			}
		}
	}()
	return s
}

// reach waits until the subscriber has delivered seq.
func (s *subscriber) reach(ctx context.Context, seq int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		s.mu.Lock()
		n := len(s.rows)
		last := int64(0)
		if n > 0 {
			last = s.rows[n-1].seq
		}
		s.mu.Unlock()
		if last >= seq {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the subscriber did not reach seq %d (at %d)", seq, last)
		}
		time.Sleep(time.Millisecond)
	}
}

func (s *subscriber) stop() []row {
	s.cancel()
	<-s.done
	return s.rows
}

func (s *subscriber) failed() int {
	n := 0
	for _, r := range s.rows {
		if r.finished && !r.finishedOK {
			n++
		}
	}
	return n
}

// roundGaps are, for each run, the times between the ends of its
// consecutive rounds (a tool.returned event ends one).
func roundGaps(rows []row) []time.Duration {
	last := map[string]time.Time{}
	var gaps []time.Duration
	for _, r := range rows {
		if r.typ != events.TypeToolReturned || r.run == "" {
			continue
		}
		if t, ok := last[r.run]; ok {
			gaps = append(gaps, r.at.Sub(t))
		}
		last[r.run] = r.at
	}
	return gaps
}

// betweenSteps are, for each run, the times from a round's tool.returned
// to the next round's tool.called: what the runtime adds between two
// steps (the result's commit, the model's scripted reply, the reply's
// commit, the scheduling), without the step's own command.
func betweenSteps(rows []row) []time.Duration {
	returned := map[string]time.Time{}
	var out []time.Duration
	for _, r := range rows {
		if r.run == "" {
			continue
		}
		switch r.typ {
		case events.TypeToolReturned:
			returned[r.run] = r.at
		case events.TypeToolCalled:
			if t, ok := returned[r.run]; ok {
				out = append(out, r.at.Sub(t))
				delete(returned, r.run)
			}
		}
	}
	return out
}
