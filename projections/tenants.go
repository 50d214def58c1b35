package projections

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// ErrCrossTenant is matched by the error refusing an event that would
// join two tenants' records: a merge of sessions of different tenants,
// a run's memory written into another tenant's namespace.
var ErrCrossTenant = errors.New("projections: across tenants")

// CrossTenantError says which records of which tenants an event would
// have joined. It matches ErrCrossTenant.
type CrossTenantError struct {
	What    string   // "merge of s1, s2", "memory namespace notes"
	Tenants []string // the tenants it would have joined
}

func (e *CrossTenantError) Error() string {
	return fmt.Sprintf("projections: %s joins the records of tenants %q: refused", e.What, e.Tenants)
}

// Is lets errors.Is match ErrCrossTenant.
func (e *CrossTenantError) Is(target error) bool { return target == ErrCrossTenant }

// tenantOfRun is the SQL for a run's tenant, or the default tenant's.
const tenantOfRun = `COALESCE((SELECT tenant FROM runs WHERE id = ?), '` + events.DefaultTenant + `')`

// runStarted writes the run's row (a submitted run has its row already,
// status queued: the params its run.started recorded replace the
// submission's) and gives the run's tenant to its input session if no
// run had it before (a session made for the run, before it started).
func (a *applier) runStarted(ev *events.Event, e *events.RunStarted) error {
	params, err := paramsText(e.Params)
	if err != nil {
		return fmt.Errorf("projections: run %q: %w", e.Run, err)
	}
	if params, err = a.sealText(ev, colRunParams, e.Run, params); err != nil {
		return err
	}
	tenant := events.TenantOr(e.Tenant)
	if err := a.adoptInput(e.Run, e.InputSession, tenant); err != nil {
		return err
	}
	err = a.tx.ExecPipelined(`INSERT INTO runs (id, workflow, input_session, params, seed, code_version, status, parent_run, started_seq, started_at, tenant, subject) VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET workflow = excluded.workflow, input_session = excluded.input_session, params = excluded.params, seed = excluded.seed,
			code_version = excluded.code_version, status = 'running', parent_run = excluded.parent_run, started_seq = excluded.started_seq, started_at = excluded.started_at,
			tenant = excluded.tenant, subject = excluded.subject`,
		e.Run, e.Workflow, e.InputSession, params, e.Seed, e.CodeVersion, e.ParentRun, ev.Seq, ev.At.UnixNano(), tenant, e.Subject)
	if err != nil {
		return fmt.Errorf("projections: run %q: %w", e.Run, err)
	}
	return nil
}

// runSubmitted lists a queued run; run.started fills in the rest. The
// row keeps the submission's seq (a run a fleet may work) and its
// params until the run starts.
func (a *applier) runSubmitted(ev *events.Event, e *events.RunSubmitted) error {
	params, err := paramsText(e.Params)
	if err != nil {
		return fmt.Errorf("projections: submitted run %q: %w", e.Run, err)
	}
	if params, err = a.sealText(ev, colRunParams, e.Run, params); err != nil {
		return err
	}
	tenant := events.TenantOr(e.Tenant)
	if err := a.adoptInput(e.Run, e.InputSession, tenant); err != nil {
		return err
	}
	err = a.tx.ExecPipelined(`INSERT INTO runs (id, workflow, input_session, params, status, submitted_seq, started_seq, started_at, tenant, subject) VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?)`,
		e.Run, e.Workflow, e.InputSession, params, ev.Seq, ev.Seq, ev.At.UnixNano(), tenant, e.Subject)
	if err != nil {
		return fmt.Errorf("projections: submitted run %q: %w", e.Run, err)
	}
	return nil
}

// adoptInput gives run's tenant to its input session when that session
// belongs to no run, is still the default tenant's and no other run took
// it as input before; a rebuild's cache follows the same rule.
func (a *applier) adoptInput(run, input, tenant string) error {
	if a.cache != nil {
		a.bulk.runTenants[run] = tenant
		si, ok := a.cache[input]
		if ok && si.runID == "" && si.tenant == events.DefaultTenant && !a.bulk.inputTaken[input] {
			si.tenant = tenant
		}
		if input != "" {
			a.bulk.inputTaken[input] = true
		}
		return nil
	}
	if input == "" || tenant == events.DefaultTenant {
		return nil
	}
	return a.tx.ExecPipelined(`UPDATE sessions SET tenant = ? WHERE id = ? AND run_id IS NULL AND tenant = '`+events.DefaultTenant+`'
		AND NOT EXISTS (SELECT 1 FROM runs WHERE input_session = ? AND id <> ?)`, tenant, input, input, run)
}

// sessionTenant is, in a rebuild, the tenant of a new session of run
// derived from source: the run's, else the source's, else the default
// (insertSession's rule).
func (a *applier) sessionTenant(run, source string) string {
	if t, ok := a.bulk.runTenants[run]; ok && run != "" {
		return t
	}
	if si, ok := a.cache[source]; ok && source != "" {
		return si.tenant
	}
	return events.DefaultTenant
}

// sameTenant refuses a merge of sessions of different tenants.
func (a *applier) sameTenant(e *events.SessionMerged) error {
	var tenants []string
	ids := make([]string, 0, len(e.Parents))
	for _, p := range e.Parents {
		si, ok, err := a.lookup(p.ID)
		if err != nil {
			return err
		}
		if !ok {
			continue // derive and the loop over the parents say which is unknown
		}
		ids = append(ids, p.ID)
		if !slices.Contains(tenants, si.tenant) {
			tenants = append(tenants, si.tenant)
		}
	}
	if len(tenants) > 1 {
		return &CrossTenantError{What: fmt.Sprintf("merge of %q into %s", ids, e.Session), Tenants: tenants}
	}
	return nil
}

// approvalRequested lists a pending request, in its run's tenant (or, of
// a request made outside a run, its session's), and marks its run
// waiting.
func (a *applier) approvalRequested(ev *events.Event, e *events.ApprovalRequested) error {
	tx := a.tx
	tenantSQL, args := `COALESCE((SELECT tenant FROM runs WHERE id = ?), (SELECT tenant FROM sessions WHERE id = ?), '`+events.DefaultTenant+`')`, []any{e.Run, e.Session}
	if a.cache != nil {
		// The session rows are in the cache, not the table, yet.
		t := events.DefaultTenant
		if rt, ok := a.bulk.runTenants[e.Run]; ok && e.Run != "" {
			t = rt
		} else if si, ok := a.cache[e.Session]; ok {
			t = si.tenant
		}
		tenantSQL, args = `?`, []any{t}
	}
	question, err := a.sealText(ev, colApprovalQuestion, e.ID, e.Question)
	if err != nil {
		return err
	}
	reason, err := a.sealText(ev, colApprovalReason, e.ID, e.Reason)
	if err != nil {
		return err
	}
	_, err = tx.Exec(`INSERT INTO approvals (id, run, session, agent, kind, tool, question, reason, status, deadline, requested_seq, requested_at, tenant)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, `+tenantSQL+`)`,
		append([]any{e.ID, e.Run, e.Session, e.Agent, e.Kind, e.Tool, question, reason, ApprovalPending, e.Deadline, ev.Seq, ev.At.UnixNano()}, args...)...)
	if err != nil {
		return fmt.Errorf("projections: approval %q: %w", e.ID, err)
	}
	if e.Run == "" {
		return nil
	}
	_, err = tx.Exec(`UPDATE runs SET status = 'waiting' WHERE id = ? AND status IN ('queued', 'running')`, e.Run)
	return err
}

// datasetCreated lists a dataset in its tenant.
func datasetCreated(tx *eventlog.Tx, ev *events.Event, e *events.DatasetCreated) error {
	if err := tx.ExecPipelined(`INSERT INTO datasets (name, tenant, seq) VALUES (?, ?, ?)`, e.Name, events.TenantOr(e.Tenant), ev.Seq); err != nil {
		return fmt.Errorf("projections: dataset %q: %w", e.Name, err)
	}
	return nil
}

// memoryRemembered lists a namespace in the tenant of the run that first
// remembered in it. A run of another tenant's is refused: its memory
// would be read by the namespace's tenant. A memory written outside a run
// (by the store's operator, from the CLI) goes to the namespace whoever
// it belongs to.
func memoryRemembered(tx *eventlog.Tx, ev *events.Event, e *events.MemoryRemembered) error {
	if ev.RunID == "" {
		return tx.ExecPipelined(`INSERT INTO memory_namespaces (namespace, tenant, seq) VALUES (?, '`+events.DefaultTenant+`', ?) ON CONFLICT (namespace) DO NOTHING`,
			e.Namespace, ev.Seq)
	}
	return requireRow(tx, func() error {
		var have, want string
		_ = tx.QueryRow(`SELECT tenant FROM memory_namespaces WHERE namespace = ?`, e.Namespace).Scan(&have)
		_ = tx.QueryRow(`SELECT `+tenantOfRun, ev.RunID).Scan(&want)
		return &CrossTenantError{What: fmt.Sprintf("run %s's memory in namespace %q", ev.RunID, e.Namespace), Tenants: []string{have, want}}
	}, `INSERT INTO memory_namespaces (namespace, tenant, seq) VALUES (?, `+tenantOfRun+`, ?)
		ON CONFLICT (namespace) DO UPDATE SET seq = memory_namespaces.seq WHERE memory_namespaces.tenant = excluded.tenant`,
		e.Namespace, ev.RunID, ev.Seq)
}
