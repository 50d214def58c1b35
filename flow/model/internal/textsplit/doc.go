// Package textsplit cuts text into the pieces fake and scripted streams
// emit: word-sized content deltas and small argument fragments. Both keep
// the invariant that concatenating the pieces gives the input back, and
// never cut inside a UTF-8 sequence.
package textsplit
