// Package pipeline is the recorded version (see package renametest).
package pipeline
