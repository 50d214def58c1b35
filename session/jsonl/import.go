package jsonl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/projections"
	"github.com/gorath/rath/session"
)

// Source is one named input for ImportSources. Name appears in errors, the
// report and the SessionImported event.
type Source struct {
	Name   string
	Reader io.Reader
}

// Options configure an import. The zero value is the default.
type Options struct {
	// MaxLineBytes bounds one line of input; a longer line fails its file
	// with a *ParseError matching ErrLineTooLong. Zero means MaxLineBytes.
	MaxLineBytes int
	// Placement decides whether the placement a file declares (its
	// sandbox_backend and sandbox_spec) becomes the imported session's: a
	// nil error accepts it. A file is not trusted to say where tools run,
	// so nil (the default) accepts none: the session is imported without
	// a placement, and the declared one is kept as provenance
	// (events.SessionImported.DeclaredPlacement, FileReport). See
	// UnderRoots.
	Placement func(events.Placement) error
	// Progress, if set, is called after each file with how many files are
	// done and how many there are.
	Progress func(done, total int64)
}

// Import imports session files with default Options (see the package doc
// for the format and the guarantees). Every file is tried: one that fails
// is reported and skipped, and the others are still imported. The error
// joins the per-file errors (each also in the report): *ParseError
// (ErrMalformed), *ExistsError (ErrExists), file and store errors. The
// context's error stops the call; files not yet imported then report it.
func Import(ctx context.Context, m *session.Manager, files ...string) (Report, error) {
	return ImportWith(ctx, m, Options{}, files...)
}

// ImportWith is Import with options. Files are read twice: their headers
// first, for the import order, then each in full when its turn comes, so
// memory holds one file's session at a time.
func ImportWith(ctx context.Context, m *session.Manager, opts Options, files ...string) (Report, error) {
	srcs := make([]pendingSource, len(files))
	for i, name := range files {
		srcs[i] = pendingSource{name: name}
		f, err := os.Open(name)
		if err != nil {
			srcs[i].err = fmt.Errorf("jsonl: %w", err)
			continue
		}
		srcs[i].hdr, srcs[i].err = newParser(name, f, opts.MaxLineBytes).header()
		f.Close()
		srcs[i].body = func() (*transcript, error) {
			f, err := os.Open(name)
			if err != nil {
				return nil, fmt.Errorf("jsonl: %w", err)
			}
			defer f.Close()
			return parse(name, f, opts.MaxLineBytes)
		}
	}
	return importPending(ctx, m, opts, srcs)
}

// ImportSources is Import over readers, for input that is not a file.
func ImportSources(ctx context.Context, m *session.Manager, srcs ...Source) (Report, error) {
	return ImportSourcesWith(ctx, m, Options{}, srcs...)
}

// ImportSourcesWith is ImportSources with options. Each reader is read up
// to its header first, and the rest when its session is imported.
func ImportSourcesWith(ctx context.Context, m *session.Manager, opts Options, srcs ...Source) (Report, error) {
	pending := make([]pendingSource, len(srcs))
	for i, src := range srcs {
		pending[i] = pendingSource{name: src.Name}
		if src.Reader == nil {
			pending[i].err = fmt.Errorf("jsonl: source %q has no reader", src.Name)
			continue
		}
		p := newParser(src.Name, src.Reader, opts.MaxLineBytes)
		pending[i].hdr, pending[i].err = p.header()
		pending[i].body = p.body
	}
	return importPending(ctx, m, opts, pending)
}

// pendingSource is one input whose header has been read: hdr holds the
// header's fields only, body reads the whole transcript.
type pendingSource struct {
	name string
	hdr  *transcript
	err  error
	body func() (*transcript, error)
}

func importPending(ctx context.Context, m *session.Manager, opts Options, srcs []pendingSource) (Report, error) {
	rep := Report{Files: make([]FileReport, len(srcs))}
	for i, s := range srcs {
		fr := &rep.Files[i]
		fr.File, fr.Err = s.name, s.err
		if s.hdr != nil {
			fr.Session, fr.Format, fr.DeclaredParents = s.hdr.id, s.hdr.format, s.hdr.parents
		}
	}
	ord := order(srcs)
	// Files whose header failed are done already.
	done := int64(len(srcs) - len(ord))
	if opts.Progress != nil && done > 0 {
		opts.Progress(done, int64(len(srcs)))
	}
	for _, i := range ord {
		fr := &rep.Files[i]
		if opts.Progress != nil {
			// Counted as it starts, so a file that fails counts too.
			done++
			opts.Progress(done, int64(len(srcs)))
		}
		if err := ctx.Err(); err != nil {
			fr.Err = err
			continue
		}
		t, err := srcs[i].body()
		if err == nil && t.id != srcs[i].hdr.id {
			err = fmt.Errorf("jsonl: %s changed while it was imported (session %s, then %s)", t.file, srcs[i].hdr.id, t.id)
		}
		if err != nil {
			fr.Err = err
			continue
		}
		placed, refused := acceptPlacement(opts, t.placement)
		linked, err := write(ctx, m, t, placed)
		if err != nil {
			fr.Err = err
			continue
		}
		fr.Chunks, fr.Incomplete, fr.Parents = len(t.chunks), t.incomplete, linked
		fr.Placement, fr.DeclaredPlacement, fr.PlacementRefused = placed, t.placement, refused
	}
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	return rep, rep.Err()
}

// acceptPlacement returns the placement to give the session and, when the
// file declared one that is not given, why.
func acceptPlacement(opts Options, declared events.Placement) (events.Placement, string) {
	if declared == (events.Placement{}) {
		return declared, ""
	}
	if opts.Placement == nil {
		return events.Placement{}, "placements in imported files are not trusted (none is accepted by default)"
	}
	if err := opts.Placement(declared); err != nil {
		return events.Placement{}, err.Error()
	}
	return declared, ""
}

// order returns the indexes of the parsed sources in import order: every
// file after the files that hold its declared parents, ties broken by
// argument order. A file whose id repeats an earlier file's depends on
// nothing extra and comes after it, so the first one wins. Cycles are cut
// where they close.
func order(srcs []pendingSource) []int {
	first := map[string]int{}
	for i, s := range srcs {
		if s.hdr == nil {
			continue
		}
		if _, ok := first[s.hdr.id]; !ok {
			first[s.hdr.id] = i
		}
	}
	const (
		unseen = iota
		visiting
		done
	)
	state := make([]int, len(srcs))
	out := make([]int, 0, len(srcs))
	// An explicit stack rather than recursion: a long chain of files must
	// not grow the goroutine stack without bound.
	type frame struct{ i, next int }
	for root := range srcs {
		if srcs[root].hdr == nil || state[root] != unseen {
			continue
		}
		stack := []frame{{i: root}}
		state[root] = visiting
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			parents := srcs[top.i].hdr.parents
			if top.next < len(parents) {
				p := parents[top.next]
				top.next++
				if j, ok := first[p]; ok && state[j] == unseen {
					state[j] = visiting
					stack = append(stack, frame{i: j})
				}
				continue
			}
			state[top.i] = done
			out = append(out, top.i)
			stack = stack[:len(stack)-1]
		}
	}
	return out
}

// write appends one session in one transaction and returns the parents it
// linked.
func write(ctx context.Context, m *session.Manager, t *transcript, placed events.Placement) ([]string, error) {
	exists, err := sessionExists(ctx, m, t.id)
	if err != nil {
		return nil, fmt.Errorf("jsonl: import %s: %w", t.file, err)
	}
	if exists {
		return nil, &ExistsError{File: t.file, Session: t.id}
	}
	var linked []string
	for _, p := range t.parents {
		ok, err := sessionExists(ctx, m, p)
		if err != nil {
			return nil, fmt.Errorf("jsonl: import %s: %w", t.file, err)
		}
		if ok {
			linked = append(linked, p)
		}
	}
	evs := make([]events.Payload, 0, 1+len(t.chunks))
	imported := events.SessionImported{
		Session: t.id, Format: t.format, File: t.file, Parents: linked, LineageKind: t.lineageKind,
		Placement: placed, Usage: t.usage, Incomplete: t.incomplete, DeclaredParents: t.parents,
	}
	if t.placement != (events.Placement{}) {
		declared := t.placement
		imported.DeclaredPlacement = &declared
	}
	evs = append(evs, imported)
	for i, c := range t.chunks {
		evs = append(evs, events.ChunkAppended{Session: t.id, Index: int64(i), Chunk: c})
	}
	_, err = m.Store().AppendWrites(ctx, eventlog.Write{Stream: t.id, Expected: eventlog.NoStream, Events: evs})
	var ce *eventlog.ConflictError
	if errors.As(err, &ce) && ce.Stream == t.id {
		// The stream exists: another writer created the session since the
		// check above, or the id names a stream that is not a session.
		return nil, &ExistsError{File: t.file, Session: t.id}
	}
	if err != nil {
		return nil, fmt.Errorf("jsonl: import %s: %w", t.file, err)
	}
	return linked, nil
}

func sessionExists(ctx context.Context, m *session.Manager, id string) (bool, error) {
	_, err := m.Reader().Session(ctx, id)
	if errors.Is(err, projections.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
