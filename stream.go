package rath

import (
	"context"
	"iter"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/session"
)

// Stream starts a run like Start and yields its events as they are
// committed, in order, from run.started to run.finished: the streaming
// view of a run, as Store.Subscribe is of the log. If the run fails, the
// last pair yielded carries its error (after run.finished). Breaking out
// of the loop cancels the run's context. The Run Start returns is
// reported through done, if not nil, before the sequence ends.
func (rt *Runtime) Stream(ctx context.Context, name string, wf flow.Workflow, input *session.Session, done func(*Run), opts ...RunOption) iter.Seq2[events.Event, error] {
	return func(yield func(events.Event, error) bool) {
		cfg := runConfig{}
		for _, o := range opts {
			o(&cfg)
		}
		id := cfg.id
		if id == "" {
			id = "run-" + rt.random(8)
			opts = append(opts, WithRunID(id))
		}
		head, err := rt.store.Head(ctx)
		if err != nil {
			yield(events.Event{}, err)
			return
		}
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		follow, stopFollow := context.WithCancel(ctx)
		defer stopFollow()
		type outcome struct {
			run *Run
			err error
		}
		result := make(chan outcome, 1)
		go func() {
			run, err := rt.Start(rctx, name, wf, input, opts...)
			// Without a recorded run.finished (Start could not record the
			// run, or its end) there is nothing more to wait for.
			if v, verr := rt.store.StreamVersion(context.WithoutCancel(ctx), id); verr != nil || v < 2 {
				stopFollow()
			}
			result <- outcome{run, err}
		}()
		last, finished := head.Seq, false
		for ev, err := range rt.store.Subscribe(follow, eventlog.Query{RunID: id, FromSeq: head.Seq + 1}) {
			if err != nil {
				if !yield(events.Event{}, err) {
					return
				}
				break
			}
			if !yield(ev, nil) {
				return
			}
			last = ev.Seq
			if ev.Type == events.TypeRunFinished && ev.Stream == id {
				finished = true
				break
			}
		}
		res := <-result
		if !finished {
			// The run ended without run.finished (it waits for a person,
			// or could not record its end): the follower stopped when
			// Start returned, maybe before its last events. Read them.
			evs, err := rt.store.Read(context.WithoutCancel(ctx), eventlog.Query{RunID: id, FromSeq: last + 1})
			if err != nil && !yield(events.Event{}, err) {
				return
			}
			for _, ev := range evs {
				if !yield(ev, nil) {
					return
				}
			}
		}
		if done != nil && res.run != nil {
			done(res.run)
		}
		if res.err != nil {
			yield(events.Event{}, res.err)
		}
	}
}
