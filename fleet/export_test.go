package fleet

import (
	"context"

	"github.com/riverqueue/river"
)

// WithBeforeTake sets a hook that runs when a worker has a job and has
// not taken its run's lease yet.
func WithBeforeTake(o Options, fn func()) Options {
	o.beforeTake = fn
	return o
}

// EnqueueAgain adds another job for run, as a reaper or River's rescue
// of a stuck job does after a takeover.
func (f *Fleet) EnqueueAgain(ctx context.Context, run string) error {
	_, err := f.client.Insert(ctx, RunArgs{Run: run}, &river.InsertOpts{Queue: f.opts.Queue})
	return err
}
