package eventlog

// Appends that come while the writer waits for the chain lock. On
// PostgreSQL another process may hold the lock for a while; the appends
// this process queues meanwhile would wait for a turn of the lock of
// their own after the batch that waited. The batch that gets the lock
// takes them in instead (run, commit): one turn of the lock serves every
// append the process has by then.

// absorb takes off the queue the appends that came while this writer
// waited for the chain lock, for the batch that now holds it: with other
// processes taking the lock in turn, they would otherwise wait for a turn
// of their own. One that must run alone (AppendTx, Exclusive) is held for
// the loop, which runs it next; nothing is taken while the loop holds a
// request already (mayTake) or the batch is one that runs alone.
func (w *writerState) absorb(local []*request) []*request {
	if !w.mayTake || w.held != nil || needsSQLTx(local) || len(local) == 0 {
		return nil
	}
	n := 0
	for _, r := range local {
		n += r.n
	}
	var more []*request
	for n < w.s.opts.MaxBatch {
		select {
		case r := <-w.s.reqs:
			if r.fn != nil || r.txFn != nil {
				// The loop's one slot: nothing else may take a request
				// off the queue in this commit.
				w.held, w.mayTake = r, false
				w.s.requests.Add(int64(len(more)))
				return more
			}
			more = append(more, r)
			n += r.n
		default:
			w.s.requests.Add(int64(len(more)))
			return more
		}
	}
	w.s.requests.Add(int64(len(more)))
	return more
}

// withAbsorbed is local with what the last run absorbed, which a redo of
// the batch must write and every reply must reach.
func (w *writerState) withAbsorbed(local []*request) []*request {
	if len(w.absorbed) == 0 {
		return local
	}
	local = append(local[:len(local):len(local)], w.absorbed...)
	w.absorbed = nil
	return local
}
