package console

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/fleet"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/replay"
)

// StartedView answers an action that starts a run in the background (a
// fork, a resume): the run to open; its page tails it live.
type StartedView struct {
	Run string `json:"run"`
}

// ForkRequest is the body of POST /api/runs/{id}/fork.
type ForkRequest struct {
	// Seq is the event of the run to fork at: everything up to it is
	// answered from the record, everything after runs live.
	Seq int64 `json:"seq"`
}

// readBody decodes a small JSON body, refusing unknown fields.
func readBody(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// background runs f for a run started from the console, under the
// console's lifetime: Close cancels it and waits for it. The channel gets
// f's error (nil, or flow.ErrWaiting's wrap, for a run that ended or
// waits) and is then closed.
func (s *Server) background(what, run string, f func(ctx context.Context) error) <-chan error {
	s.bg.Add(1)
	out := make(chan error, 1)
	go func() {
		defer s.bg.Done()
		defer close(out)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-s.done:
				cancel()
			case <-ctx.Done():
			}
		}()
		err := f(ctx)
		if err != nil && !errors.Is(err, flow.ErrWaiting) {
			// The run's own record says how it ended; this is for the
			// operator's log (a fork that could not start records nothing).
			slog.Warn("console: "+what, "run", run, "err", err)
		}
		out <- err
	}()
	return out
}

// startPoll is how often startedOrFailed looks for the new run.
const startPoll = 20 * time.Millisecond

// startedOrFailed waits until run is in the runs table (its page can
// open), or its background work ended first: then its error, if the run
// never started.
func (s *Server) startedOrFailed(ctx context.Context, run string, done <-chan error) error {
	tick := time.NewTicker(startPoll)
	defer tick.Stop()
	for {
		if _, err := s.reader(ctx).Run(ctx, run); err == nil {
			return nil
		}
		select {
		case err, ok := <-done:
			if _, rerr := s.reader(ctx).Run(ctx, run); rerr == nil {
				return nil
			}
			if ok && err != nil {
				return err
			}
			return fmt.Errorf("run %s ended without starting", run)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// apiRunFork is POST /api/runs/{id}/fork: a new run that replays this one
// up to seq and goes on live from there (replay.ForkAt), started in the
// background; the answer names it at once.
func (s *Server) apiRunFork(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), r.PathValue("id")
	if s.refuseLive(w, "fork") {
		return
	}
	var req ForkRequest
	if err := readBody(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "fork: %v", err)
		return
	}
	row, err := s.reader(ctx).Run(ctx, id)
	if notFound(w, err) {
		return
	}
	if req.Seq < row.StartedSeq || (row.FinishedSeq.Valid && req.Seq > row.FinishedSeq.Int64) {
		writeError(w, http.StatusBadRequest, "fork: seq %d is not an event of run %s", req.Seq, id)
		return
	}
	evs, err := s.rt.Store().Read(ctx, eventlog.Query{FromSeq: req.Seq, Limit: 1})
	if err != nil {
		writeError(w, http.StatusInternalServerError, "fork: %v", err)
		return
	}
	if len(evs) == 0 || evs[0].Seq != req.Seq || evs[0].RunID != id {
		writeError(w, http.StatusBadRequest, "fork: seq %d is not an event of run %s", req.Seq, id)
		return
	}
	// Everything after seq runs live: its providers call the model.
	wf, err := s.rt.RecordedWorkflow(ctx, id, rath.LiveMode)
	if err != nil {
		writeError(w, http.StatusUnprocessableEntity, "cannot rebuild the run's workflow: %v", err)
		return
	}
	child, err := newRunID()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "fork: %v", err)
		return
	}
	done := s.background("fork", child, func(ctx context.Context) error {
		_, err := replay.ForkAt(ctx, s.rt, id, req.Seq, wf, rath.WithRunID(child))
		return err
	})
	// The answer comes once the run exists: its page can open at once.
	if err := s.startedOrFailed(ctx, child, done); err != nil {
		writeError(w, http.StatusUnprocessableEntity, "fork: %v", err)
		return
	}
	writeJSON(w, http.StatusAccepted, StartedView{Run: child})
}

func newRunID() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("run id: %w", err)
	}
	return "run-" + hex.EncodeToString(b), nil
}

// CancelRequest is the body of POST /api/runs/{id}/cancel.
type CancelRequest struct {
	Reason string `json:"reason,omitempty"`
}

// apiRunCancel is POST /api/runs/{id}/cancel: what `rath cancel` does
// (fleet.Cancel), for a run submitted to the fleet.
func (s *Server) apiRunCancel(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), r.PathValue("id")
	var req CancelRequest
	if err := readBody(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "cancel: %v", err)
		return
	}
	if _, err := s.reader(ctx).Run(ctx, id); err != nil && !s.submitted(ctx, id) {
		notFound(w, err)
		return
	}
	if !s.submitted(ctx, id) {
		writeError(w, http.StatusConflict, "cancel: run %s was not submitted to the fleet (rath submit); a run started in a process ends with it", id)
		return
	}
	reason := strings.TrimSpace(req.Reason)
	if reason == "" {
		reason = "canceled from the console"
	}
	err := fleet.Cancel(ctx, s.rt, id, reason)
	switch {
	case errors.Is(err, fleet.ErrFinished):
		writeError(w, http.StatusConflict, "%v", err)
	case err != nil:
		writeError(w, http.StatusInternalServerError, "cancel: %v", err)
	default:
		writeJSON(w, http.StatusOK, StartedView{Run: id})
	}
}

// submitted reports whether run was submitted to the fleet: a worker, not
// this process, runs and resumes it.
func (s *Server) submitted(ctx context.Context, run string) bool {
	evs, err := s.rt.Store().ReadStream(ctx, events.SubmitStream(run), 1)
	return err == nil && len(evs) > 0
}

// apiRunResume is POST /api/runs/{id}/resume: fleet.Resume in the
// background for a run that stopped (a crash, or a decided approval) and
// that no worker owns. A submitted run is resumed by a worker; a run
// another holder (a `rath resume`) continues now is refused.
func (s *Server) apiRunResume(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), r.PathValue("id")
	// Where the record ends a resume calls the model and runs tools for
	// real, as a fork does: the operator's decision, like the fork's.
	if s.refuseLive(w, "resume") {
		return
	}
	row, err := s.reader(ctx).Run(ctx, id)
	if notFound(w, err) {
		return
	}
	if row.FinishedSeq.Valid {
		writeError(w, http.StatusConflict, "resume: run %s has finished", id)
		return
	}
	if s.submitted(ctx, id) {
		writeError(w, http.StatusConflict, "resume: run %s belongs to the fleet: a worker resumes it (rath worker)", id)
		return
	}
	wf, err := s.rt.RecordedWorkflow(ctx, id, rath.LiveMode)
	if err != nil {
		writeError(w, http.StatusUnprocessableEntity, "cannot rebuild the run's workflow: %v", err)
		return
	}
	// Under the run's lease, as `rath resume` and a worker hold it: a run
	// another holder continues now is refused before anything runs, and
	// the answer waits until the lease is this resume's.
	held := make(chan struct{})
	done := s.background("resume", id, func(ctx context.Context) error {
		_, err := fleet.Resume(ctx, s.rt, id, wf, fleet.ResumeOptions{Held: func() { close(held) }})
		return err
	})
	select {
	case <-held:
	case err := <-done:
		if err == nil || isClosed(held) {
			break // it took the lease and has ended already
		}
		if errors.Is(err, fleet.ErrHeld) {
			writeError(w, http.StatusConflict, "resume: %v: wait until it stops, or for the lease to lapse", err)
		} else {
			writeError(w, http.StatusInternalServerError, "resume: %v", err)
		}
		return
	case <-ctx.Done():
		return
	}
	writeJSON(w, http.StatusAccepted, StartedView{Run: id})
}

// isClosed reports whether c is closed.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
