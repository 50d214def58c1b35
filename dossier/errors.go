package dossier

import "errors"

var (
	// ErrRunNotFound is returned by Build for a run id the store does not
	// know.
	ErrRunNotFound = errors.New("dossier: run not found")
	// ErrFormat is returned by Render for a format name other than html,
	// md or jsonl.
	ErrFormat = errors.New("dossier: unknown format")
)
