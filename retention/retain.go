package retention

import (
	"context"
	"errors"
	"fmt"

	"path/filepath"
	"slices"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
)

// Options configure Retain.
type Options struct {
	// CompletedBefore selects the runs that finished before it. Required.
	CompletedBefore time.Time
	// KeepLast keeps the N most recently finished runs whenever they
	// finished. Zero keeps none for that reason.
	KeepLast int
	// ArchiveTo is the directory the runs are archived into, one
	// directory per run (ArchiveTo/RUN). Empty drops the payloads without
	// an archive.
	ArchiveTo string
	// Archiver writes each archive; nil is LogArchiver.
	Archiver Archiver
	// DryRun reports what would be retained and changes nothing.
	DryRun bool
	// By is recorded as who redacted; empty is "rath retain".
	By string
}

// Skipped is a run Retain left alone, and why.
type Skipped struct {
	Run    string `json:"run"`
	Reason string `json:"reason"`
}

// Report says what Retain did.
type Report struct {
	// Runs are the runs retained (or, with DryRun, that would be).
	Runs    []string  `json:"runs"`
	Skipped []Skipped `json:"skipped,omitempty"`
	// ArchivedBytes are the payload and blob bytes the archives hold;
	// PayloadBytes, Blobs and BlobBytes what the redaction deleted.
	ArchivedBytes int64 `json:"archived_bytes"`
	PayloadBytes  int64 `json:"payload_bytes"`
	Blobs         int64 `json:"blobs"`
	BlobBytes     int64 `json:"blob_bytes"`
	// RecordSeq is the evidence.redacted event of the retention.
	RecordSeq int64 `json:"record_seq,omitempty"`
}

// kept are the event types retention leaves readable: the run's identity
// and outcome, so the run is still listed (and known to be archived).
var kept = map[string]bool{events.TypeRunStarted: true, events.TypeRunFinished: true}

// ReasonRetention is the reason a retention's redaction records.
const ReasonRetention = "retention"

// Retain archives the finished runs opts selects and then deletes their
// payloads (all but run.started and run.finished) in one redaction with
// reason "retention", and rebuilds the projections. A run that is not
// finished (queued, running, waiting) is never selected; a run whose
// sessions a live session descends from (one that is not itself being
// retained) is skipped, as is a run already retained.
func Retain(ctx context.Context, rt *rath.Runtime, opts Options) (*Report, error) {
	if opts.CompletedBefore.IsZero() {
		return nil, fmt.Errorf("retention: a completion cutoff is required: %w", events.ErrInvalid)
	}
	if opts.KeepLast < 0 {
		return nil, fmt.Errorf("retention: keep-last %d is negative: %w", opts.KeepLast, events.ErrInvalid)
	}
	arch := opts.Archiver
	if arch == nil {
		arch = LogArchiver{}
	}
	rep := &Report{Runs: []string{}}
	runs, err := candidates(ctx, rt, opts, rep)
	if err != nil {
		return nil, err
	}
	runs, err = dropDescended(ctx, rt, runs, rep)
	if err != nil {
		return nil, err
	}
	if opts.DryRun || len(runs) == 0 {
		rep.Runs = append(rep.Runs, runs...)
		return rep, nil
	}
	var seqs []int64
	for _, run := range runs {
		if opts.ArchiveTo != "" {
			dir := filepath.Join(opts.ArchiveTo, run)
			n, err := arch.Archive(ctx, rt, run, dir)
			if errors.Is(err, events.ErrNotRedactable) {
				rep.Skipped = append(rep.Skipped, Skipped{run, err.Error()})
				continue
			}
			if err != nil {
				return nil, err
			}
			if _, ok := arch.(LogArchiver); ok {
				// Redact only what verifiably left the store.
				if _, err := VerifyArchive(dir); err != nil {
					return nil, err
				}
			}
			rep.ArchivedBytes += n
		}
		s, err := runSeqs(ctx, rt, run)
		if err != nil {
			return nil, err
		}
		seqs = append(seqs, s...)
		rep.Runs = append(rep.Runs, run)
	}
	if len(seqs) == 0 {
		return rep, nil
	}
	by := opts.By
	if by == "" {
		by = "rath retain"
	}
	res, err := rt.RedactEvents(ctx, events.RedactRequest{Seqs: seqs, By: by, Reason: ReasonRetention, Scope: "retention",
		Target: fmt.Sprintf("%d runs finished before %s", len(rep.Runs), opts.CompletedBefore.UTC().Format(time.RFC3339))})
	if err != nil {
		return nil, err
	}
	rep.RecordSeq, rep.PayloadBytes, rep.Blobs, rep.BlobBytes = res.Record.Seq, res.PayloadBytes, res.Blobs, res.BlobBytes
	return rep, nil
}

// candidates lists the finished runs before the cutoff, newest first,
// past the KeepLast newest and not retained before.
func candidates(ctx context.Context, rt *rath.Runtime, opts Options, rep *Report) ([]string, error) {
	db := rt.Store().DB()
	var rows []struct {
		ID         string `db:"id"`
		FinishedAt int64  `db:"finished_at"`
	}
	err := db.SelectContext(ctx, &rows, db.Rebind(`SELECT id, finished_at FROM runs WHERE status IN (?, ?) AND finished_at IS NOT NULL ORDER BY finished_at DESC, id`), rath.RunOK, rath.RunError)
	if err != nil {
		return nil, fmt.Errorf("retention: list the runs: %w", err)
	}
	cutoff := opts.CompletedBefore.UnixNano()
	var out []string
	for i, r := range rows {
		if i < opts.KeepLast || r.FinishedAt >= cutoff {
			continue
		}
		red, err := rt.Store().RedactedInRun(ctx, r.ID, 0)
		if err != nil {
			return nil, err
		}
		seqs, err := runSeqs(ctx, rt, r.ID)
		if err != nil {
			return nil, err
		}
		if len(red) >= len(seqs) {
			continue // retained before: nothing left to delete
		}
		out = append(out, r.ID)
	}
	return out, nil
}

// dropDescended removes the runs whose sessions (those the run appended
// to, its input included) a live session descends from: one that is not
// among the retained runs' sessions.
func dropDescended(ctx context.Context, rt *rath.Runtime, runs []string, rep *Report) ([]string, error) {
	db := rt.Store().DB()
	for {
		owned := map[string]string{} // session -> retained run
		for _, run := range runs {
			var ids []string
			if err := db.SelectContext(ctx, &ids, db.Rebind(`SELECT id FROM sessions WHERE id IN (SELECT stream FROM events WHERE run_id = ?)`), run); err != nil {
				return nil, fmt.Errorf("retention: the sessions of %s: %w", run, err)
			}
			for _, id := range ids {
				owned[id] = run
			}
		}
		blocked := map[string]string{}
		for session, run := range owned {
			if _, done := blocked[run]; done {
				continue
			}
			live, err := liveDescendant(ctx, rt, session, owned)
			if err != nil {
				return nil, err
			}
			if live != "" {
				blocked[run] = live
			}
		}
		if len(blocked) == 0 {
			return runs, nil
		}
		runs = slices.DeleteFunc(runs, func(run string) bool {
			live, ok := blocked[run]
			if ok {
				rep.Skipped = append(rep.Skipped, Skipped{run, fmt.Sprintf("session %s descends from it", live)})
			}
			return ok
		})
	}
}

// liveDescendant returns a descendant of session that owned does not
// hold, or "".
func liveDescendant(ctx context.Context, rt *rath.Runtime, session string, owned map[string]string) (string, error) {
	db := rt.Store().DB()
	seen := map[string]bool{session: true}
	queue := []string{session}
	for len(queue) > 0 {
		var children []string
		if err := db.SelectContext(ctx, &children, db.Rebind(`SELECT child FROM session_edges WHERE parent = ? ORDER BY child`), queue[0]); err != nil {
			return "", fmt.Errorf("retention: the session graph: %w", err)
		}
		queue = queue[1:]
		for _, c := range children {
			if seen[c] {
				continue
			}
			if _, ok := owned[c]; !ok {
				return c, nil
			}
			seen[c] = true
			queue = append(queue, c)
		}
	}
	return "", nil
}

// runSeqs lists the seqs of a run's events retention deletes.
func runSeqs(ctx context.Context, rt *rath.Runtime, run string) ([]int64, error) {
	db := rt.Store().DB()
	var rows []struct {
		Seq  int64  `db:"seq"`
		Type string `db:"type"`
	}
	if err := db.SelectContext(ctx, &rows, db.Rebind(`SELECT seq, type FROM events WHERE run_id = ? ORDER BY seq`), run); err != nil {
		return nil, fmt.Errorf("retention: the events of %s: %w", run, err)
	}
	var out []int64
	for _, r := range rows {
		if !kept[r.Type] && r.Type != events.TypeEvidenceRedacted {
			out = append(out, r.Seq)
		}
	}
	return out, nil
}
