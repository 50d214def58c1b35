package bundle

import "errors"

var (
	// ErrExists is returned when the bundle's directory exists and is not
	// empty: a bundle is never written over another.
	ErrExists = errors.New("bundle: the directory exists and is not empty")
	// ErrNoEvents is returned for a run with no events in the log.
	ErrNoEvents = errors.New("bundle: the run has no events")
	// ErrCheckpoint is returned when the checkpoint does not verify with
	// the key (or a witness's), does not cover the run, or names another
	// root than the store's tree at its size.
	ErrCheckpoint = errors.New("bundle: bad checkpoint")
	// ErrNoKey is returned when Options.Key is nil.
	ErrNoKey = errors.New("bundle: a signing key is required (RATH_SIGNING_KEY or --key)")
)
