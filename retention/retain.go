package retention

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
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
// retained) is skipped, as is a run already retained. The descendants are
// looked for again inside the redaction's transaction, under the write
// lock: a fork made while the runs were archived skips its run (whose
// archive is then removed) instead of losing its prefix's content.
//
// Each archive is written under ArchiveTo/.RUN.partial and renamed to
// ArchiveTo/RUN once it verifies (archive.go, install), so a retain
// stopped at any point leaves either no archive of a run or a whole one,
// and the next retain starts that run over.
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
	db := rt.Store().DB()
	runs, err = dropDescended(ctx, db, db.Rebind, runs, rep)
	if err != nil {
		return nil, err
	}
	if opts.DryRun || len(runs) == 0 {
		rep.Runs = append(rep.Runs, runs...)
		return rep, nil
	}
	var retained []string
	sizes := map[string]int64{}
	for _, run := range runs {
		if opts.ArchiveTo != "" {
			n, err := archiveRun(ctx, rt, arch, run, opts.ArchiveTo)
			if errors.Is(err, eventlog.ErrNotRedactable) {
				rep.Skipped = append(rep.Skipped, Skipped{run, err.Error()})
				continue
			}
			if err != nil {
				return nil, err
			}
			sizes[run] = n
		}
		retained = append(retained, run)
	}
	by := opts.By
	if by == "" {
		by = "rath retain"
	}
	for len(retained) > 0 {
		var seqs []int64
		for _, run := range retained {
			s, err := runSeqs(ctx, db, db.Rebind, run)
			if err != nil {
				return nil, err
			}
			seqs = append(seqs, s...)
		}
		if len(seqs) == 0 {
			break
		}
		var late []Skipped
		guard := func(ctx context.Context, tx *sql.Tx) error {
			late = nil
			var sk Report
			left, err := dropDescended(ctx, tx, db.Rebind, slices.Clone(retained), &sk)
			if err != nil {
				return err
			}
			if len(left) < len(retained) {
				late = sk.Skipped
				return errDescended
			}
			return nil
		}
		res, err := rt.RedactEvents(ctx, eventlog.RedactRequest{Seqs: seqs, By: by, Reason: ReasonRetention, Scope: "retention",
			Target: fmt.Sprintf("%d runs finished before %s", len(retained), opts.CompletedBefore.UTC().Format(time.RFC3339)), Guard: guard})
		if errors.Is(err, errDescended) {
			// A session of these runs was forked (or continued) since they
			// were chosen: leave them, and their archives, alone.
			for _, sk := range late {
				retained = slices.DeleteFunc(retained, func(r string) bool { return r == sk.Run })
				if opts.ArchiveTo != "" {
					if err := os.RemoveAll(filepath.Join(opts.ArchiveTo, sk.Run)); err != nil {
						return nil, fmt.Errorf("retention: remove the archive of %s, which is not retained: %w", sk.Run, err)
					}
				}
				delete(sizes, sk.Run)
			}
			rep.Skipped = append(rep.Skipped, late...)
			continue
		}
		if err != nil {
			return nil, err
		}
		rep.RecordSeq, rep.PayloadBytes, rep.Blobs, rep.BlobBytes = res.Record.Seq, res.PayloadBytes, res.Blobs, res.BlobBytes
		break
	}
	rep.Runs = append(rep.Runs, retained...)
	for _, n := range sizes {
		rep.ArchivedBytes += n
	}
	return rep, nil
}

// errDescended aborts a retention's redaction whose runs a session now
// descends from (Retain's guard); Retain drops them and tries again.
var errDescended = errors.New("retention: a live session descends from a run being retained")

// querier reads through a database handle or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// selectStrings runs a query of one text column (written with ?, rebound
// for the store's dialect).
func selectStrings(ctx context.Context, q querier, rebind func(string) string, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, rebind(query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
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
		seqs, err := runSeqs(ctx, db, db.Rebind, r.ID)
		if err != nil {
			return nil, err
		}
		if len(seqs) == 0 {
			continue // retained before: nothing left to delete
		}
		out = append(out, r.ID)
	}
	return out, nil
}

// dropDescended removes the runs whose sessions (those the run appended
// to, its input included) a live session descends from: one that is not
// among the retained runs' sessions.
func dropDescended(ctx context.Context, q querier, rebind func(string) string, runs []string, rep *Report) ([]string, error) {
	for {
		owned := map[string]string{} // session -> retained run
		for _, run := range runs {
			ids, err := selectStrings(ctx, q, rebind, `SELECT id FROM sessions WHERE id IN (SELECT stream FROM events WHERE run_id = ?)`, run)
			if err != nil {
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
			live, err := liveDescendant(ctx, q, rebind, session, owned)
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
func liveDescendant(ctx context.Context, q querier, rebind func(string) string, session string, owned map[string]string) (string, error) {
	seen := map[string]bool{session: true}
	queue := []string{session}
	for len(queue) > 0 {
		children, err := selectStrings(ctx, q, rebind, `SELECT child FROM session_edges WHERE parent = ? ORDER BY child`, queue[0])
		if err != nil {
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

// runSeqs lists the seqs of a run's events retention deletes and that are
// not redacted yet: its own, but for those that keep it listed, and the
// decisions on its approval requests, which are written without its id
// (a request deleted without its decision would leave a decision of
// nothing).
func runSeqs(ctx context.Context, q querier, rebind func(string) string, run string) ([]int64, error) {
	if run == "" {
		return nil, fmt.Errorf("retention: a run without an id: %w", events.ErrInvalid)
	}
	rows, err := q.QueryContext(ctx, rebind(`SELECT e.seq, e.type FROM events e
		WHERE (e.run_id = ? OR e.stream IN (SELECT stream FROM events WHERE run_id = ? AND type = ?))
		AND NOT EXISTS (SELECT 1 FROM redactions r WHERE r.seq = e.seq) ORDER BY e.seq`), run, run, events.TypeApprovalRequested)
	if err != nil {
		return nil, fmt.Errorf("retention: the events of %s: %w", run, err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var seq int64
		var typ string
		if err := rows.Scan(&seq, &typ); err != nil {
			return nil, fmt.Errorf("retention: the events of %s: %w", run, err)
		}
		if !kept[typ] && typ != events.TypeEvidenceRedacted {
			out = append(out, seq)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("retention: the events of %s: %w", run, err)
	}
	return out, nil
}
