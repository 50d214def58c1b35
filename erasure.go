package rath

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/keyring"
)

// ErasureInfo is one erasure as the log records it: the evidence.erased
// event at Seq, written at At.
type ErasureInfo struct {
	Seq       int64     `json:"seq"`
	At        time.Time `json:"at"`
	Subject   string    `json:"subject"`
	By        string    `json:"by"`
	Reason    string    `json:"reason"`
	KeyIDHash string    `json:"key_id_hash"`
}

// String formats the erasure as verify lists it.
func (e ErasureInfo) String() string {
	return fmt.Sprintf("%s: erased at seq %d by %s: %s", e.Subject, e.Seq, e.By, e.Reason)
}

// Erasures lists the erasures recorded in the log, in seq order. A record
// that does not decode is an error: verify has proved the log, so it is
// one this build does not know.
func (rt *Runtime) Erasures(ctx context.Context) ([]ErasureInfo, error) {
	var out []ErasureInfo
	for ev, err := range rt.store.Scan(ctx, eventlog.Query{Stream: events.StreamEvidence, Types: []string{events.TypeEvidenceErased}}) {
		if err != nil {
			return nil, fmt.Errorf("rath: list erasures: %w", err)
		}
		p, err := ev.Decode()
		if err != nil {
			return nil, fmt.Errorf("rath: list erasures: seq %d: %w", ev.Seq, err)
		}
		rec := p.(*events.EvidenceErased)
		out = append(out, ErasureInfo{Seq: ev.Seq, At: ev.At, Subject: rec.Subject, By: rec.By, Reason: rec.Reason, KeyIDHash: rec.KeyIDHash})
	}
	return out, nil
}

// checkErasures fails verify when a destroyed key is in the store again
// (restored from a backup or written back by hand): the erasure it
// records would then be a lie. A subject given a new key after its
// erasure is fine: what was sealed before stays under the destroyed one.
func (rt *Runtime) checkErasures(ctx context.Context, erasures []ErasureInfo) (*eventlog.VerifyError, error) {
	db := rt.store.DB()
	for _, e := range erasures {
		var id string
		err := db.QueryRowContext(ctx, db.Rebind(`SELECT key_id FROM subject_keys WHERE subject = ?`), e.Subject).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("rath: verify erasures: %w", err)
		}
		if sum := sha256.Sum256([]byte(id)); hex.EncodeToString(sum[:]) == e.KeyIDHash {
			return &eventlog.VerifyError{Seq: e.Seq, Reason: fmt.Sprintf("the key of subject %q, destroyed by the erasure at seq %d, is in the store again: it was restored from a copy", e.Subject, e.Seq)}, nil
		}
	}
	return nil, nil
}

// ErrNoKEK is returned by Erase on a runtime without a key-encryption
// key: its content is not sealed, so no key can be destroyed.
var ErrNoKEK = errors.New("rath: erase: no key-encryption key is set, so content is not sealed under subjects' keys (set RATH_KEK_FILE; rath redact deletes content in clear)")

// ErrNothingToErase is matched by an *EraseError: the subject has no key
// to destroy (it never had one, or it was erased).
var ErrNothingToErase = errors.New("rath: nothing to erase")

// EraseError says why a subject cannot be erased; nothing was changed.
// ErasedAt is the seq of the evidence.erased event of an earlier erasure,
// 0 for a subject the store never gave a key.
type EraseError struct {
	Subject  string
	ErasedAt int64
}

func (e *EraseError) Error() string {
	if e.ErasedAt > 0 {
		return fmt.Sprintf("rath: erase: subject %q was already erased (at seq %d) and has had no content since", e.Subject, e.ErasedAt)
	}
	return fmt.Sprintf("rath: erase: subject %q has no key: the store holds no content sealed for it", e.Subject)
}

// Is makes errors.Is(err, ErrNothingToErase) true.
func (e *EraseError) Is(target error) bool { return target == ErrNothingToErase }

// EraseOptions name the subject whose key goes ("user:ID", "run:RUNID",
// "session:SID" or "memory:NS"; see package keyring), who asks and why
// (both required, recorded and listed by verify).
type EraseOptions struct {
	Subject string
	By      string
	Reason  string
}

// EraseResult reports an erasure.
type EraseResult struct {
	// Record is the evidence.erased event.
	Record events.Event
	// KeyIDHash is the hex SHA-256 of the destroyed key's id, as Record
	// holds it.
	KeyIDHash string
}

// Erase forgets a subject by destroying its data key: the key's row is
// deleted and an evidence.erased event (who, why, the subject, a hash of
// the key's id) appended in one transaction, in which the read models
// drop what they derived from the subject's content (dropDerived), so
// all of it happens or none. Everything sealed under the key, in the log,
// its blobs and the projections, stays as ciphertext no one can open, and
// every leaf, root and proof still verifies. Then each of the subject's
// runs that was queued, not started, is recorded failed
// (ErasedBeforeStart), and the memory index purges the subject's
// memories. Its time grows with the subject's runs, not
// with the store, but for that purge. This runtime forgets the key at
// once; other processes on the store within keyring.Freshness (they read
// the generation row the erasure rewrote).
//
// It returns an *EraseError (ErrNothingToErase) for a subject without a
// key, a *keyring.SubjectError (keyring.ErrSubject) for one that is not
// valid, and ErrNoKEK when the runtime has no key-encryption key.
func (rt *Runtime) Erase(ctx context.Context, opts EraseOptions) (EraseResult, error) {
	if err := keyring.ValidSubject(opts.Subject); err != nil {
		return EraseResult{}, fmt.Errorf("rath: erase: %w", err)
	}
	kr := rt.keys
	if kr == nil {
		return EraseResult{}, ErrNoKEK
	}
	db := rt.store.DB()
	for attempt := 0; ; attempt++ {
		dk, err := kr.Key(ctx, db, opts.Subject)
		if errors.Is(err, keyring.ErrErased) {
			return EraseResult{}, rt.nothingToErase(ctx, opts.Subject)
		}
		if err != nil {
			return EraseResult{}, fmt.Errorf("rath: erase: %w", err)
		}
		under, err := rt.readUnderKey(ctx, dk.ID)
		if err != nil {
			return EraseResult{}, fmt.Errorf("rath: erase: %w", err)
		}
		sum := sha256.Sum256([]byte(dk.ID))
		rec := events.EvidenceErased{Subject: opts.Subject, By: opts.By, Reason: opts.Reason, KeyIDHash: hex.EncodeToString(sum[:]), Shapes: under.shapes}
		// The record is built from the key read above; the transaction
		// destroys exactly that key, or nothing.
		replaced, unshaped := false, false
		var queued []queuedRun
		destroy := func(ctx context.Context, tx *sql.Tx) error {
			id, err := kr.Erase(ctx, tx, opts.Subject)
			if err != nil {
				return err
			}
			if id != dk.ID {
				replaced = true
				return errKeyReplaced
			}
			// A session event sealed under the key since they were read
			// (a run going on meanwhile) would leave a rebuild without
			// its session, a memory its text in the index: read them
			// again.
			if unshaped, err = sealedSince(ctx, tx, db.Rebind, under.seqs, dk.ID); err != nil || unshaped {
				if err == nil {
					err = errSealedMeanwhile
				}
				return err
			}
			queued, err = rt.dropDerived(ctx, tx, opts.Subject, dk.ID)
			return err
		}
		stored, err := rt.store.AppendTx(ctx, destroy, eventlog.Write{Stream: events.StreamEvidence, Expected: eventlog.AnyVersion, Events: []events.Payload{rec}})
		switch {
		case replaced && attempt < 3:
			continue // erased and made again meanwhile: destroy the new one
		case unshaped && attempt < 8:
			continue
		case errors.Is(err, keyring.ErrErased):
			return EraseResult{}, rt.nothingToErase(ctx, opts.Subject)
		case err != nil:
			return EraseResult{}, fmt.Errorf("rath: erase: %w", err)
		}
		// A key read by another goroutine while the erasure ran must
		// not stay cached here.
		kr.ForgetAll()
		res := EraseResult{Record: stored[0], KeyIDHash: rec.KeyIDHash}
		// Both run, whichever fails: each leaves its own part undone.
		return res, errors.Join(rt.endQueued(ctx, queued), rt.purgeMemories(ctx, under.memories))
	}
}

// ErasedBeforeStart is the error recorded for a run whose subject was
// erased while it was queued, before any worker started it.
const ErasedBeforeStart = "the run's subject was erased before it started: its prompt and parameters are gone"

// queuedRun is a run that was queued, not started, when its subject's
// key was destroyed: with the key went its prompt and params, so no
// worker can run it.
type queuedRun struct {
	id, workflow, input, tenant string
}

// endQueued records each run that was queued when its subject was erased
// as failed (ErasedBeforeStart), so it ends where rath wait, rath runs
// and the console see it, instead of leaving the read models with the
// subject's other runs and never running. The record is sealed under the
// run's own key ("run:ID") and names no subject: it holds nothing of the
// person, and a later erasure of the subject leaves it alone. A worker
// that started the run meanwhile wins (the run.started here conflicts):
// that run goes on under the subject's new key, as a running one does.
func (rt *Runtime) endQueued(ctx context.Context, runs []queuedRun) error {
	for _, q := range runs {
		rctx := events.ContextWithSubject(ctx, keyring.LevelRun+":"+q.id)
		_, err := rt.store.In(eventlog.Scope{Run: events.RunRef{ID: q.id}}).Append(rctx, q.id, eventlog.NoStream,
			events.RunStarted{Run: q.id, Workflow: q.workflow, InputSession: q.input, Seed: q.id, Tenant: events.TenantField(q.tenant)},
			events.RunFinished{Run: q.id, Status: RunError, Error: ErasedBeforeStart})
		if errors.Is(err, eventlog.ErrConflict) {
			continue
		}
		if err != nil {
			return fmt.Errorf("rath: erased, but recording queued run %s as failed did not work: %w", q.id, err)
		}
	}
	return nil
}

// sealedSince reports whether an event sealed under the key keyID that
// an erasure reads (sealed_by_key) is not among seqs, read before the
// transaction: one was appended meanwhile.
func sealedSince(ctx context.Context, tx *sql.Tx, rebind func(string) string, seqs []int64, keyID string) (bool, error) {
	var now []int64
	if err := selectInts(ctx, tx, &now, rebind(sealedUnderKey), keyID); err != nil {
		return false, err
	}
	read := make(map[int64]bool, len(seqs))
	for _, seq := range seqs {
		read[seq] = true
	}
	for _, seq := range now {
		if !read[seq] {
			return true, nil
		}
	}
	return false, nil
}

// selectInts reads a query's one integer column.
func selectInts(ctx context.Context, q queryer, out *[]int64, query string, args ...any) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return err
		}
		*out = append(*out, v)
	}
	return rows.Err()
}

// errKeyReplaced aborts an erasure whose subject's key changed between
// the read and the transaction.
var errKeyReplaced = errors.New("rath: erase: the subject's key was replaced meanwhile")

// errSealedMeanwhile aborts an erasure that finds an event sealed under
// the key since it read them (readUnderKey): it reads them again.
var errSealedMeanwhile = errors.New("rath: erase: the subject's sessions or memories grew meanwhile")

// nothingToErase words the error for a subject without a key.
func (rt *Runtime) nothingToErase(ctx context.Context, subject string) error {
	e := &EraseError{Subject: subject}
	all, err := rt.Erasures(ctx)
	if err != nil {
		return err
	}
	for _, x := range all {
		if x.Subject == subject {
			e.ErasedAt = x.Seq
		}
	}
	return e
}

// The read models' content columns hold what the projector sealed under
// the subject's key (projections, sealed.go), which no one can open once
// it is erased, and reads show as erased. A row written in clear before
// columns were sealed (a store from before, not yet rebuilt) is cleared:
// these statements leave sealed values as they are.
const (
	sealedLike = events.SealedPrefix + "%"
	clearRuns  = `UPDATE runs SET params = CASE WHEN params LIKE ? THEN params ELSE '' END, error = CASE WHEN error LIKE ? THEN error ELSE '' END WHERE id = ?`
	// Its approvals' requests are sealed under the subject: a rebuild
	// makes no row of them, so neither do the read models.
	dropApprovals = `DELETE FROM approvals WHERE run = ?`
	// The run's row: a rebuild cannot make it from its sealed
	// run.started. Its sessions are recounted (erasure_recount.go).
	dropRun        = `DELETE FROM runs WHERE id = ?`
	clearApprovals = `UPDATE approvals SET question = CASE WHEN question LIKE ? THEN question ELSE '' END, reason = CASE WHEN reason LIKE ? THEN reason ELSE '' END WHERE session = ?`
	// The index on subject is partial (subject <> ''): a planner uses
	// it for a bound parameter only when the query says so too.
	subjectRuns = `SELECT id FROM runs WHERE subject = ? AND subject <> ''`
	// The index's rows of a key once it is gone (a rebuild makes none).
	dropSealed = `DELETE FROM sealed_by_key WHERE key_id = ?`
	// A run queued, not started: its row says so (runUnderKey).
	runQueued = `SELECT workflow, input_session, tenant, params,
		submitted_seq IS NOT NULL AND started_seq = submitted_seq AND finished_seq IS NULL FROM runs WHERE id = ?`
)

// sealedUnderKey lists the events a key sealed that an erasure reads
// (the sessions it started or linked, the memories it remembered): the
// shaped types and memory.remembered, not the model calls and
// placements the index holds for the recount.
var sealedUnderKey = `SELECT seq FROM sealed_by_key WHERE key_id = ? AND type IN (` +
	sqlList(append(events.ShapedTypes(), events.TypeMemoryRemembered)) + `) ORDER BY seq`

// sqlList quotes names, which hold no quote, as an SQL list.
func sqlList(names []string) string {
	return "'" + strings.Join(names, "', '") + "'"
}

// erasureStatements are every statement an erasure runs, each of which
// must find its rows through an index, on both stores (a test explains
// them): an erasure's time grows with the subject's runs, not with the
// store.
func erasureStatements() []string {
	return []string{clearRuns, dropApprovals, dropRun, clearApprovals, subjectRuns, sealedUnderKey, dropSealed, runQueued,
		keyStreams, dropKeyUsage, sessionExists, sessionSnapshots, recountSession, recountSnapshot}
}

// dropDerived clears, in the erasure's transaction (under the write
// lock, as the projectors write them), what the SQL projections hold of
// subject's content in clear and what a rebuild could no longer derive
// (the statements above), and recounts the sessions the key's events
// touched (recountUnderKey). It finds the rows through indexes (the
// runs' subject column, run ids, sessions, sealed_by_key), reading of the
// log only those sessions' streams, and reads the subject's runs in the
// transaction: a run the subject starts
// after the erasure, under a new key, keeps its rows, and so does one
// whose params are sealed under another key than keyID (runUnderKey).
// It returns the runs that were queued, not started, for endQueued.
func (rt *Runtime) dropDerived(ctx context.Context, tx *sql.Tx, subject, keyID string) ([]queuedRun, error) {
	db := rt.store.DB()
	runs, streams, err := subjectReach(ctx, tx, db.Rebind, subject)
	if err != nil {
		return nil, fmt.Errorf("list the subject's runs: %w", err)
	}
	var queued []queuedRun
	for _, run := range runs {
		q, ours, err := runUnderKey(ctx, tx, db.Rebind, run, keyID)
		if err != nil {
			return nil, fmt.Errorf("read the subject's runs: %w", err)
		}
		if !ours {
			continue // submitted since, under the subject's new key: it reads
		}
		if q != nil {
			queued = append(queued, *q)
		}
		for _, st := range []struct {
			q    string
			args []any
		}{
			{clearRuns, []any{sealedLike, sealedLike, run}},
			{dropApprovals, []any{run}},
			{dropRun, []any{run}},
		} {
			if _, err := tx.ExecContext(ctx, db.Rebind(st.q), st.args...); err != nil {
				return nil, fmt.Errorf("clear the read models: %w", err)
			}
		}
	}
	for _, s := range streams {
		if _, err := tx.ExecContext(ctx, db.Rebind(clearApprovals), sealedLike, sealedLike, s); err != nil {
			return nil, fmt.Errorf("clear the read models: %w", err)
		}
	}
	if err := rt.recountUnderKey(ctx, tx, keyID); err != nil {
		return nil, fmt.Errorf("recount the read models: %w", err)
	}
	if _, err := tx.ExecContext(ctx, db.Rebind(dropSealed), keyID); err != nil {
		return nil, fmt.Errorf("clear the read models: %w", err)
	}
	return queued, nil
}

// runUnderKey reads run's row in tx: ours is false when its params are
// sealed under another key than keyID (a run submitted after the key was
// destroyed, under the subject's new one, which a rebuild still lists),
// and q is set when the run is queued, not started. A row in clear, with
// no params, or gone already is the erasure's.
func runUnderKey(ctx context.Context, tx *sql.Tx, rebind func(string) string, run, keyID string) (q *queuedRun, ours bool, err error) {
	var r queuedRun
	var params string
	var waiting bool
	err = tx.QueryRowContext(ctx, rebind(runQueued), run).Scan(&r.workflow, &r.input, &r.tenant, &params, &waiting)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, true, nil // its rows that remain are cleared as before
	case err != nil:
		return nil, false, err
	case strings.HasPrefix(params, events.SealedPrefix) && !strings.Contains(params, `"k":"`+keyID+`"`):
		return nil, false, nil
	case waiting:
		r.id = run
		return &r, true, nil
	}
	return nil, true, nil
}

// rememberedAt is a memory the local index may hold: its id and the
// event that remembered it.
type rememberedAt struct {
	seq int64
	id  string
}

// purgeMemories removes from the local index the memories whose events
// the erasure made unreadable (a namespace's stream holds other
// subjects' too), leaving their text in none of its files; when the
// purge fails it rebuilds the index, which leaves out what no longer
// opens.
func (rt *Runtime) purgeMemories(ctx context.Context, memories []rememberedAt) error {
	var ids []string
	for _, m := range memories {
		ev, err := rt.store.Get(ctx, m.seq)
		if err != nil {
			return fmt.Errorf("rath: erased, but reading its memories failed (run rath rebuild --memory): %w", err)
		}
		if ev.Redacted {
			ids = append(ids, m.id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	m, err := rt.Memory(ctx)
	if err != nil {
		return fmt.Errorf("rath: erased, but the memory index did not open (run rath rebuild --memory): %w", err)
	}
	_, err = m.Purge(ctx, ids)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("rath: erased, but purging the memory index was cut short (run rath rebuild --memory): %w", err)
	}
	if _, err := m.Rebuild(ctx); err != nil {
		return fmt.Errorf("rath: erased, but rebuilding the memory index failed (run rath rebuild --memory): %w", err)
	}
	return nil
}

// subjectReach finds, through indexes, the runs and streams whose content
// is subject's: a user's runs (the runs' subject column), a run, a
// session's stream or a memory namespace's.
func subjectReach(ctx context.Context, q queryer, rebind func(string) string, subject string) (runs, streams []string, err error) {
	level, id, _ := strings.Cut(subject, ":")
	switch level {
	case keyring.LevelUser:
		rows, err := q.QueryContext(ctx, rebind(subjectRuns), subject)
		if err != nil {
			return nil, nil, err
		}
		defer rows.Close()
		for rows.Next() {
			var run string
			if err := rows.Scan(&run); err != nil {
				return nil, nil, err
			}
			runs = append(runs, run)
		}
		err = rows.Err()
		return runs, nil, err
	case keyring.LevelRun:
		runs = []string{id}
	case keyring.LevelSession:
		streams = []string{id}
	case keyring.LevelMemory:
		streams = []string{events.MemoryStream(id)}
	}
	return runs, streams, nil
}

// queryer is a *sql.DB or *sql.Tx.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// underKey is what an erasure reads of the events sealed under the key
// it destroys, while the key still opens them (sealed_by_key indexes
// them by key, wherever they were made: in the subject's runs, before
// a run started, outside any).
type underKey struct {
	// seqs are the events read.
	seqs []int64
	// shapes keep the structure of the events that start or link
	// sessions (events.ErasureShapeOf), so the projections rebuild the
	// session graph once they no longer open: the subject's sessions,
	// forks of them by others, merges into them.
	shapes []events.Shape
	// memories are the ones the local memory index may hold: once
	// erased, their ids are sealed too.
	memories []rememberedAt
}

func (rt *Runtime) readUnderKey(ctx context.Context, keyID string) (underKey, error) {
	db := rt.store.DB()
	var u underKey
	if err := selectInts(ctx, db, &u.seqs, db.Rebind(sealedUnderKey), keyID); err != nil {
		return u, fmt.Errorf("read the subject's sessions and memories: %w", err)
	}
	for _, seq := range u.seqs {
		ev, err := rt.store.Get(ctx, seq)
		if err != nil {
			return u, err
		}
		if ev.Redacted {
			continue // a redaction kept its shape, or it was erased before
		}
		if ev.Type == events.TypeMemoryRemembered {
			p, err := ev.Decode()
			if err != nil {
				return u, err
			}
			if m := p.(*events.MemoryRemembered); m.Backend == "" {
				u.memories = append(u.memories, rememberedAt{seq: seq, id: m.ID})
			}
			continue
		}
		sh, ok, err := events.ErasureShapeOf(ev.Seq, ev.Type, ev.TypeVersion, ev.Payload)
		if err != nil {
			return u, err
		}
		if ok {
			u.shapes = append(u.shapes, sh)
		}
	}
	return u, nil
}
