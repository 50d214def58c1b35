package fleet

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/keyring"
	"github.com/gorath/rath/session"
)

// ErrSubmitOnly is returned by Run on a Fleet opened with
// Options.SubmitOnly.
var ErrSubmitOnly = errors.New("fleet: opened to submit only; it cannot work runs")

// Submission is one run of SubmitBatch: its workflow, its input session
// (created in the batch's transaction) and its parameters.
type Submission struct {
	Workflow string
	Input    session.Prepared
	Params   map[string]string
	// Subject is whose content the run is: a person's id, as
	// rath.WithSubject takes it ("" for the run's own). Its input
	// session is sealed under the subject's key, and the worker runs it
	// under that subject. The runs of one batch name the same subject.
	Subject string
}

// SubmitBatch records the runs, their input sessions and their jobs in
// one transaction and returns their ids in order: all of them are
// submitted, or none (the error says which failed, by its index).
func (f *Fleet) SubmitBatch(ctx context.Context, subs []Submission) ([]string, error) {
	if len(subs) == 0 {
		return nil, nil
	}
	subject, err := batchSubject(subs)
	if err != nil {
		return nil, err
	}
	if subject != "" {
		ctx = events.ContextWithSubject(ctx, subject)
	}
	ids := make([]string, len(subs))
	writes := make([]eventlog.Write, 0, 2*len(subs))
	jobs := make([]river.InsertManyParams, len(subs))
	for i, s := range subs {
		if s.Input.ID == "" || s.Input.Write.Stream != s.Input.ID {
			return nil, fmt.Errorf("fleet: submit: run %d: %w", i+1, errNoInput)
		}
		run, err := newRunID()
		if err != nil {
			return nil, err
		}
		ids[i] = run
		tenant := f.submitTenant()
		sub := events.RunSubmitted{Run: run, Workflow: s.Workflow, InputSession: s.Input.ID, Queue: f.queueOf(tenant), Params: s.Params, Tenant: tenant, Subject: subject}
		if err := sub.Validate(); err != nil {
			return nil, fmt.Errorf("fleet: submit: run %d: %w", i+1, err)
		}
		writes = append(writes, s.Input.Write,
			eventlog.Write{Stream: events.SubmitStream(run), Expected: eventlog.NoStream, Events: []events.Payload{sub}})
		jobs[i] = river.InsertManyParams{Args: RunArgs{Run: run}, InsertOpts: &river.InsertOpts{Queue: f.queueOf(tenant)}}
	}
	_, err = f.rt.Store().AppendTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		// One statement for all the jobs (River's batch insert).
		if _, err := f.client.InsertManyTx(ctx, tx, jobs); err != nil {
			return fmt.Errorf("fleet: enqueue %d runs: %w", len(jobs), err)
		}
		return nil
	}, writes...)
	if err != nil {
		return nil, fmt.Errorf("fleet: submit: %w", err)
	}
	return ids, nil
}

var errNoInput = errors.New("no prepared input session (session.Manager.PrepareNew)")

// errMixedSubjects refuses a batch whose runs name different subjects.
var errMixedSubjects = errors.New("the runs of one batch must name the same subject")

func newRunID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "run-" + hex.EncodeToString(b[:]), nil
}

// migrated reports whether River's tables are at the latest version its
// migrator knows, with one query: most processes find them so, and skip
// the migrator's lock and its reads of the schema. Any failure of the
// query (no table yet, an older layout) means "not known": the caller
// runs the migrator, which reports real errors.
func migrated(ctx context.Context, db *sql.DB, latest int) bool {
	v, err := riverVersion(ctx, db)
	return err == nil && v >= latest
}

// riverVersion is the version of River's tables (its main migration line).
func riverVersion(ctx context.Context, db *sql.DB) (int, error) {
	var v int
	err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM river_migration WHERE line = '`+riverdriver.MigrationLineMain+`'`).Scan(&v)
	return v, err
}

// batchSubject is the subject ("user:ID") the submissions name, "" for
// none: one append seals them all, under one subject.
func batchSubject(subs []Submission) (string, error) {
	id := subs[0].Subject
	for i, s := range subs {
		if s.Subject != id {
			return "", fmt.Errorf("fleet: submit: run %d: %w", i+1, errMixedSubjects)
		}
	}
	if id == "" {
		return "", nil
	}
	subject, err := keyring.Subject(keyring.LevelUser, id)
	if err != nil {
		return "", fmt.Errorf("fleet: submit: %w", err)
	}
	return subject, nil
}
