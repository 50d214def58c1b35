// Package pipeline is the renamed version with the recorded name pinned
// (see package renametest).
package pipeline
