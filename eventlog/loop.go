package eventlog

import (
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// gather moves queued requests into batch until it is full, the queue is
// empty, or an exclusive request comes up (returned as pending).
func (s *Store) gather(batch *[]*request, n int) (int, *request) {
	for n < s.opts.MaxBatch {
		select {
		case r := <-s.reqs:
			// An exclusive request, or an AppendTx whose function reads the
			// tables (a redaction looks for what still names a blob), runs
			// alone: on PostgreSQL a batch's rows reach the tables only at
			// its end, so its batch-mates' rows would be invisible to it.
			if r.fn != nil || r.txFn != nil {
				return n, r
			}
			*batch = append(*batch, r)
			n += r.n
		default:
			return n, nil
		}
	}
	return n, nil
}

// linger gathers more requests while callers are inside Append but not
// yet in the batch (those the last commit released are about to queue
// again), until none is left outside it or lingerMax has passed. It waits
// on the queue rather than yielding: a writer that yielded was picked
// again at once from the global run queue, so its processor never went
// looking for the callers runnable on the other one, and 32 yields ran out
// while they still sealed their events (a sealed store's commits held 12
// appends of 16 where a plain one's held 14; now both hold 15).
func (s *Store) linger(batch *[]*request, n int) (int, *request) {
	bound := lingerMax
	if s.opts.lingerFor > 0 {
		bound = s.opts.lingerFor
	}
	timer := time.NewTimer(bound)
	defer timer.Stop()
	for int64(len(*batch)) < s.inflight.Load() && n < s.opts.MaxBatch {
		select {
		case r := <-s.reqs:
			if r.fn != nil || r.txFn != nil {
				return n, r
			}
			*batch = append(*batch, r)
			n += r.n
		case <-timer.C:
			return n, nil
		}
	}
	return n, nil
}

// refuseQueued answers every queued request with ErrClosed.
func (s *Store) refuseQueued() {
	for {
		select {
		case r := <-s.reqs:
			r.reply <- result{err: ErrClosed}
		default:
			return
		}
	}
}

func (s *Store) loop() {
	defer close(s.done)
	batch := make([]*request, 0, 64)
	var pending *request
	lastLen := 0
	for {
		var first *request
		if pending != nil {
			first, pending = pending, nil
		} else {
			select {
			case first = <-s.reqs:
			case <-s.stop:
				s.refuseQueued()
				return
			}
		}
		if first.fn != nil {
			s.w.exclusive(first)
			continue
		}
		batch = append(batch[:0], first)
		n := first.n
		// Gather what is queued. Callers released by the previous commit
		// are often about to queue their next append; when the last batch
		// showed several concurrent callers, linger briefly for them, so
		// one fsync serves more appends.
		if first.txFn == nil {
			n, pending = s.gather(&batch, n)
		}
		if pending == nil && lastLen > 1 && first.txFn == nil {
			_, pending = s.linger(&batch, n)
		}
		lastLen = len(batch)
		// Counted before the replies go out, so a caller that reads Stats
		// once its append returned sees its own commit.
		s.commits.Add(1)
		s.requests.Add(int64(len(batch)))
		// The batch may take in what queues while it waits for the
		// chain lock (absorb), unless one request already waits here.
		s.w.mayTake = pending == nil
		s.w.commit(batch)
		for i := range batch {
			batch[i] = nil
		}
		if s.w.held != nil {
			pending, s.w.held = s.w.held, nil
		}
	}
}
