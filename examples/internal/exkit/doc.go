// Package exkit holds the examples' shared plumbing, so that each program
// in examples/ shows only what it teaches.
//
// It owns four small things every example needs and none is about:
// choosing the model provider ([Provider]: the embedded cassette, or a
// real model with -live), opening a runtime in a kept or temporary
// directory ([Open]), printing a replay verdict ([Verdict]) and stopping on
// an error ([Check]).
//
// It does not own any example's logic and is not part of rath's API: it is
// internal to examples/ and may import the rath packages, never the other
// way round. Its helpers exit the process on failure, as a command's main
// may, so they are for example programs only.
package exkit
