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

// Setting reads a server setting as River's pool and its listener's
// connections see it.
func (f *Fleet) Setting(ctx context.Context, name string) (pool, listener string, err error) {
	if err := f.db.QueryRowContext(ctx, "SELECT current_setting($1)", name).Scan(&pool); err != nil {
		return "", "", err
	}
	err = f.listener.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&listener)
	return pool, listener, err
}

// ReapOnce is one look of the reaper.
func (f *Fleet) ReapOnce(ctx context.Context) { f.reapOnce(ctx) }
