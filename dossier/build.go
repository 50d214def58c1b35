package dossier

import (
	"context"
	"errors"
	"fmt"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/projections"
)

// Build gathers everything the store holds about run runID. Problems with
// single items (a missing blob, an undecodable event) become Warnings, so
// a damaged log still gets a dossier that says what is wrong; the error
// is for an unknown run (ErrRunNotFound) and for I/O failures.
func Build(ctx context.Context, rt *rath.Runtime, runID string, opts Options) (*Dossier, error) {
	d := &Dossier{Replay: opts.Replay, Attestation: opts.Attestation, opts: opts, bySession: map[string]*Session{}}
	// Verify before reading: the run, sessions, chunks and usage below come
	// from the projections, which the verification proves equal to the log.
	if err := verify(ctx, rt, d); err != nil {
		return nil, err
	}
	if err := d.build(ctx, rt, runID); err != nil {
		if v := d.Chain.Verify; v != nil && !v.OK() && !errors.Is(err, ErrRunNotFound) {
			// Damaged projections can stop the build; say what was found.
			return nil, fmt.Errorf("%w (verification had failed: %v)", err, v.Failure)
		}
		return nil, err
	}
	return d, nil
}

func (d *Dossier) build(ctx context.Context, rt *rath.Runtime, runID string) error {
	row, err := rt.Reader().Run(ctx, runID)
	if errors.Is(err, projections.ErrNotFound) {
		return fmt.Errorf("%w: %q", ErrRunNotFound, runID)
	}
	if err != nil {
		return fmt.Errorf("dossier: run %s: %w", runID, err)
	}
	evs, err := rt.Store().ReadRun(ctx, runID)
	if err != nil {
		return fmt.Errorf("dossier: read run %s: %w", runID, err)
	}
	d.Run = Run{ID: row.ID, Workflow: row.Workflow, Status: row.Status, Error: row.Error, Seed: row.Seed,
		CodeVersion: row.CodeVersion, ParentRun: row.ParentRun, InputSession: row.InputSession,
		OutputSession: row.OutputSession, StartedSeq: row.StartedSeq, Events: len(evs)}
	if row.FinishedSeq.Valid {
		d.Run.FinishedSeq = row.FinishedSeq.Int64
	}
	b := &builder{d: d, rt: rt, blobs: &blobCache{store: rt.Store(), m: map[string][]byte{}}}
	b.fold(evs)
	if err := b.loadBlobs(ctx); err != nil {
		return err
	}
	b.finishTools()
	b.finishProviders(ctx)
	if err := b.approvals(ctx, runID); err != nil {
		return err
	}
	if err := b.scores(ctx, runID); err != nil {
		return err
	}
	if err := b.sessions(ctx); err != nil {
		return err
	}
	d.Graph = layout(d.Sessions, b.edges)
	if err := b.chain(ctx, evs); err != nil {
		return err
	}
	d.blobs = b.blobs.m
	return nil
}

// builder holds the state of one Build.
type builder struct {
	d     *Dossier
	rt    *rath.Runtime
	blobs *blobCache
	ids   anchors
	// payloads are the decoded payloads of d.Events (nil where decoding
	// failed).
	payloads []events.Payload

	// touched lists the sessions the run names, in order of first mention.
	touched []string
	seen    map[string]bool
	// created are the sessions the run created; their own chunks are new.
	created map[string]bool
	// appended maps a chunk written by the run to the seq that wrote it.
	appended map[chunkRef]int64
	// author is the first workflow path seen on each session.
	author map[string]string
	// entries counts workflow.entered per session and path.
	entries map[string]map[string]int
	// pendingTools maps (session, call id) to calls not yet returned.
	pendingTools map[pair][]*ToolCall
	open         map[pair][]int // (session, path) -> indexes of open spans
	edges        []graphEdgeIn
}

// chunkRef names a stored chunk: its home session and index there.
type chunkRef struct {
	session string
	index   int64
}

// pair is a two-part map key: (session, call id), (session, path),
// (agent, session).
type pair struct{ a, b string }

func (b *builder) touch(ids ...string) {
	if b.seen == nil {
		b.seen = map[string]bool{}
	}
	for _, id := range ids {
		if id != "" && !b.seen[id] {
			b.seen[id] = true
			b.touched = append(b.touched, id)
		}
	}
}

func (b *builder) warn(format string, args ...any) {
	b.d.Warnings = append(b.d.Warnings, fmt.Sprintf(format, args...))
}

func (b *builder) setAuthor(session, path string) {
	if _, ok := b.author[session]; !ok && path != "" {
		b.author[session] = path
	}
}

// verify checks the chain, the blobs and the projections unless told not
// to.
func verify(ctx context.Context, rt *rath.Runtime, d *Dossier) error {
	if d.opts.SkipVerify {
		return nil
	}
	rep, err := rt.Verify(ctx, eventlog.VerifyOptions{Head: d.opts.Head})
	if err != nil {
		return fmt.Errorf("dossier: verify: %w", err)
	}
	d.Chain.Verify = rep
	return nil
}

// chain reads the log head and the run's first and last events.
func (b *builder) chain(ctx context.Context, evs []events.Event) error {
	d := b.d
	head, err := b.rt.Store().Head(ctx)
	if err != nil {
		return fmt.Errorf("dossier: %w", err)
	}
	d.Chain.Head = head
	if len(evs) > 0 {
		d.Chain.First = eventlog.Head{Seq: evs[0].Seq, Hash: evs[0].Hash}
		d.Chain.Last = eventlog.Head{Seq: evs[len(evs)-1].Seq, Hash: evs[len(evs)-1].Hash}
	}
	return nil
}
