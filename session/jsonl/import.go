package jsonl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

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

// Import imports session files (see the package doc for the format and the
// guarantees). Every file is tried: one that fails is reported and skipped,
// and the others are still imported. The error joins the per-file errors
// (each also in the report): *ParseError (ErrMalformed), *ExistsError
// (ErrExists), file and store errors. The context's error stops the call;
// files not yet imported then report it.
func Import(ctx context.Context, m *session.Manager, files ...string) (Report, error) {
	parsed := make([]parsedSource, len(files))
	for i, name := range files {
		parsed[i] = parseFile(name)
	}
	return importParsed(ctx, m, parsed)
}

// ImportSources is Import over readers, for input that is not a file.
func ImportSources(ctx context.Context, m *session.Manager, srcs ...Source) (Report, error) {
	parsed := make([]parsedSource, len(srcs))
	for i, src := range srcs {
		if src.Reader == nil {
			parsed[i] = parsedSource{name: src.Name, err: fmt.Errorf("jsonl: source %q has no reader", src.Name)}
			continue
		}
		t, err := parse(src.Name, src.Reader)
		parsed[i] = parsedSource{name: src.Name, t: t, err: err}
	}
	return importParsed(ctx, m, parsed)
}

type parsedSource struct {
	name string
	t    *transcript
	err  error
}

func parseFile(name string) parsedSource {
	f, err := os.Open(name)
	if err != nil {
		return parsedSource{name: name, err: fmt.Errorf("jsonl: %w", err)}
	}
	defer f.Close()
	t, err := parse(name, f)
	return parsedSource{name: name, t: t, err: err}
}

func importParsed(ctx context.Context, m *session.Manager, srcs []parsedSource) (Report, error) {
	rep := Report{Files: make([]FileReport, len(srcs))}
	for i, s := range srcs {
		fr := &rep.Files[i]
		fr.File, fr.Err = s.name, s.err
		if s.t != nil {
			fr.Session, fr.Format, fr.DeclaredParents = s.t.id, s.t.format, s.t.parents
		}
	}
	for _, i := range order(srcs) {
		fr := &rep.Files[i]
		if err := ctx.Err(); err != nil {
			fr.Err = err
			continue
		}
		linked, err := write(ctx, m, srcs[i].t)
		if err != nil {
			fr.Err = err
			continue
		}
		fr.Chunks, fr.Incomplete, fr.Parents = len(srcs[i].t.chunks), srcs[i].t.incomplete, linked
	}
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	return rep, rep.Err()
}

// order returns the indexes of the parsed sources in import order: every
// file after the files that hold its declared parents, ties broken by
// argument order. A file whose id repeats an earlier file's depends on
// nothing extra and comes after it, so the first one wins. Cycles are cut
// where they close.
func order(srcs []parsedSource) []int {
	first := map[string]int{}
	for i, s := range srcs {
		if s.t == nil {
			continue
		}
		if _, ok := first[s.t.id]; !ok {
			first[s.t.id] = i
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
		if srcs[root].t == nil || state[root] != unseen {
			continue
		}
		stack := []frame{{i: root}}
		state[root] = visiting
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			parents := srcs[top.i].t.parents
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
func write(ctx context.Context, m *session.Manager, t *transcript) ([]string, error) {
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
	evs = append(evs, events.SessionImported{
		Session: t.id, Format: t.format, File: t.file, Parents: linked, LineageKind: t.lineageKind,
		Placement: t.placement, Usage: t.usage, Incomplete: t.incomplete, DeclaredParents: t.parents,
	})
	for i, c := range t.chunks {
		evs = append(evs, events.ChunkAppended{Session: t.id, Index: int64(i), Chunk: c})
	}
	_, err = m.Store().AppendWrites(ctx, events.Write{Stream: t.id, Expected: events.NoStream, Events: evs})
	var ce *events.ConflictError
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
