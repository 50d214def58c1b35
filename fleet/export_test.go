package fleet

// WithBeforeTake sets a hook that runs when a worker has a job and has
// not taken its run's lease yet.
func WithBeforeTake(o Options, fn func()) Options {
	o.beforeTake = fn
	return o
}
