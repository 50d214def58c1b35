// Package pipeline is the version with the field renamed (see package
// renametest).
package pipeline
