package rath

import (
	"context"
	"errors"
	"fmt"

	"github.com/gorath/rath/checkpoint"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/projections"
)

// VerifyReport is what Verify proved: the hash chain and blobs (the
// embedded report) and, once those hold, that the projections every
// reader shows (sessions, chunks, usage, runs) equal a rebuild from the
// log. Failure names the first problem of either kind, so OK is false and
// Failure is set whenever something did not verify.
type VerifyReport struct {
	*eventlog.VerifyReport
	// Projections is the comparison with a rebuild; nil when the chain or
	// a blob failed, as a rebuild from a bad log proves nothing.
	Projections *projections.CheckReport `json:"projections,omitempty"`
	// Attestation is what the store's signed checkpoints attest (package
	// checkpoint); nil when the log or the projections failed first.
	Attestation *checkpoint.Report `json:"attestation,omitempty"`
	// Erasures are the subjects whose keys were destroyed (Runtime.Erase),
	// in the order they were; nil when the log failed first.
	Erasures []ErasureInfo `json:"erasures,omitempty"`
}

// Verify checks the hash chain and blobs (see eventlog.Store.Verify), then
// that the SQL projections equal a rebuild of the log into a scratch
// database (see projections.Check): what `show`, `sessions`, `runs` and a
// dossier display is read from the projections, which the chain alone does
// not protect. A differing row is reported as the Failure, naming its table
// and key. The error is for I/O failures.
func (rt *Runtime) Verify(ctx context.Context, opts eventlog.VerifyOptions) (*VerifyReport, error) {
	chain, err := rt.store.Verify(ctx, opts)
	if err != nil {
		return nil, err
	}
	rep := &VerifyReport{VerifyReport: chain}
	if !chain.OK() {
		return rep, nil
	}
	if rep.Erasures, err = rt.Erasures(ctx); err != nil {
		return nil, fmt.Errorf("rath: verify: %w", err)
	}
	if rep.Failure, err = rt.checkErasures(ctx, rep.Erasures); err != nil {
		return nil, err
	} else if rep.Failure != nil {
		return rep, nil
	}
	chk, err := projections.Check(ctx, rt.store, projections.CheckOptions{})
	switch {
	case errors.Is(err, projections.ErrInconsistent):
		rep.Failure = &eventlog.VerifyError{Reason: fmt.Sprintf("the log does not rebuild into projections: %v", err)}
		return rep, nil
	case err != nil:
		return nil, fmt.Errorf("rath: verify projections: %w", err)
	}
	rep.Projections = chk
	if !chk.OK() {
		rep.Failure = &eventlog.VerifyError{Reason: chk.Differences[0].Error() +
			" (rath rebuild restores the projections from the log)"}
		return rep, nil
	}
	// The checkpoints last: they are checked against the tree the log
	// has just been proved to be.
	att, err := checkpoint.Verify(ctx, rt.store, checkpoint.VerifyOptions{Keys: rt.trustedKeys, Witnesses: rt.witnesses})
	if err != nil {
		return nil, fmt.Errorf("rath: verify checkpoints: %w", err)
	}
	rep.Attestation = att
	switch {
	case att.Failure != nil:
		rep.Failure = &eventlog.VerifyError{Seq: att.Failure.Size, Reason: att.Failure.Error()}
	case att.Unwitnessed != nil:
		rep.Failure = &eventlog.VerifyError{Reason: att.Unwitnessed.Error()}
	}
	return rep, nil
}

// Rebuild drops and replays the SQL projections (see projections.Rebuild).
func (rt *Runtime) Rebuild(ctx context.Context, progress func(done, total int64)) (projections.RebuildStats, error) {
	return projections.Rebuild(ctx, rt.store, progress)
}
