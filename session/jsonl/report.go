package jsonl

import (
	"encoding/json"
	"errors"

	"github.com/gorath/rath/events"
)

// FileReport is the outcome of importing one file.
type FileReport struct {
	// File is the name the input was given (a path, for Import).
	File string
	// Session is the session id the header declared; empty if the file
	// has no readable header.
	Session string
	// Format is FormatOpenRath or FormatExport.
	Format string
	// Chunks is the number of chunks imported (0 if the file failed).
	Chunks int
	// Incomplete is set for a file without a trailer: its writer stopped
	// before closing the session.
	Incomplete bool
	// Parents are the declared parents that were in the store and became
	// graph edges; DeclaredParents are all the parents the header named.
	Parents         []string
	DeclaredParents []string
	// Placement is the placement the session was given; DeclaredPlacement
	// the one the file named; PlacementRefused, when the file named one
	// that was not given, says why (see Options.Placement).
	Placement         events.Placement
	DeclaredPlacement events.Placement
	PlacementRefused  string
	// Err is why the file was not imported: a *ParseError, an *ExistsError,
	// a read error or a store error. Nil when the file was imported.
	Err error
}

// OK reports whether the file was imported.
func (f FileReport) OK() bool { return f.Err == nil }

// MarshalJSON renders the report with the error as text.
func (f FileReport) MarshalJSON() ([]byte, error) {
	type view struct {
		File              string            `json:"file"`
		Session           string            `json:"session,omitempty"`
		Format            string            `json:"format,omitempty"`
		Chunks            int               `json:"chunks"`
		Incomplete        bool              `json:"incomplete,omitempty"`
		Parents           []string          `json:"parents,omitempty"`
		DeclaredParents   []string          `json:"declared_parents,omitempty"`
		Placement         *events.Placement `json:"placement,omitempty"`
		DeclaredPlacement *events.Placement `json:"declared_placement,omitempty"`
		PlacementRefused  string            `json:"placement_refused,omitempty"`
		Error             string            `json:"error,omitempty"`
	}
	v := view{File: f.File, Session: f.Session, Format: f.Format, Chunks: f.Chunks, Incomplete: f.Incomplete,
		Parents: f.Parents, DeclaredParents: f.DeclaredParents, PlacementRefused: f.PlacementRefused}
	if f.Placement != (events.Placement{}) {
		v.Placement = &f.Placement
	}
	if f.DeclaredPlacement != (events.Placement{}) {
		v.DeclaredPlacement = &f.DeclaredPlacement
	}
	if f.Err != nil {
		v.Error = f.Err.Error()
	}
	return json.Marshal(v)
}

// Report lists the outcome of every file of one import call, in the order
// the files were given (not the order they were imported in).
type Report struct {
	Files []FileReport `json:"files"`
}

// Imported returns how many files were imported.
func (r Report) Imported() int {
	n := 0
	for _, f := range r.Files {
		if f.OK() {
			n++
		}
	}
	return n
}

// Err joins the errors of the files that failed, or returns nil.
func (r Report) Err() error {
	var errs []error
	for _, f := range r.Files {
		if f.Err != nil {
			errs = append(errs, f.Err)
		}
	}
	return errors.Join(errs...)
}
