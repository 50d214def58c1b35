// Package scratchopt holds the settings of a throwaway runtime that a
// replay records into (package replay's scratch store): leaner than any
// store a program keeps, and unfit for one. rath.Options carries them in
// a field of this package's type, so they stay out of the public API: a
// program outside this module cannot name the type. It imports nothing of
// rath.
package scratchopt

// Options are the scratch-store settings. The zero value is a normal
// store.
type Options struct {
	// DiscardBlobs makes the store drop the blobs events reference (see
	// eventlog.Options.DiscardBlobs); only a strict replay wants that.
	DiscardBlobs bool
	// WithoutReadIndexes leaves out of an in-memory store the event log's
	// indexes by run and by type: reads by run or type still answer, by
	// scanning the log, and every append writes two b-trees fewer. For a
	// store that holds about one run.
	WithoutReadIndexes bool
	// WithoutTree keeps no Merkle tree over an in-memory store's events
	// (eventlog.Options.WithoutTree): its log does not verify. For a store
	// whose events are compared with another log's.
	WithoutTree bool
}
