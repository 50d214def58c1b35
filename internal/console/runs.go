package console

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorath/rath/access"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/jsonview"
	"github.com/gorath/rath/projections"
)

// RunView is a run as `rath runs --json` prints it, plus its summary. It
// holds no content of the run (no prompt, no transcript): the runs list
// reads no content, so it needs no access record, and every read of a
// run's content is one of its own, recorded (access.go).
type RunView struct {
	jsonview.Run
	Summary
	// Models are the models its calls used; Cost what they cost by the
	// configured prices (absent without prices, or when a model used has
	// none).
	Models []string `json:"models,omitempty"`
	Cost   *float64 `json:"cost,omitempty"`
	// Actions are what the run page offers for this run: only what its
	// state allows (set on one run's view, not on the list's).
	Actions *RunActions `json:"actions,omitempty"`
	// Replay is the verdict of the last replay of the run from this
	// console (nil: none since the console started).
	Replay *ReplayView `json:"replay,omitempty"`
}

// RunActions says which of the run page's actions the run's state allows:
// a resume of a stopped run no worker owns, a cancel of a submitted run
// that has not ended, a fork that goes on live (model and tools). A
// resume and a fork are offered only on a console allowed to run work
// live (Options.AllowLive).
type RunActions struct {
	Resume bool `json:"resume"`
	Cancel bool `json:"cancel"`
	Fork   bool `json:"fork"`
}

// Summary is what a run cost: its duration (to now while it runs), the
// model usage and tool calls its events record, how many events.
type Summary struct {
	DurationMS int64        `json:"duration_ms"`
	Usage      events.Usage `json:"usage"`
	ToolCalls  int64        `json:"tool_calls"`
	Events     int64        `json:"events"`
}

// RunsPage is one page of GET /api/runs, newest first.
type RunsPage struct {
	Runs []RunView `json:"runs"`
	// Counts are the runs per status in the time range (all statuses,
	// whatever the status filter), for the list's tabs.
	Counts map[string]int64 `json:"counts"`
	// Priced says whether a price table is configured (a cost column).
	Priced bool `json:"priced"`
	// NextBefore is the before= of the next (older) page; 0 at the end.
	NextBefore int64 `json:"next_before,omitempty"`
}

func intParam(r *http.Request, name string, def, lo, hi int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s=%q: want an integer from %d to %d", name, v, lo, hi)
	}
	return n, nil
}

func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	limit, err := intParam(r, "limit", 50, 1, 500)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	before, err := intParam(r, "before", 0, 0, 1<<62)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	since, err := sinceParam(r, s.opts.Now())
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	page, err := s.runsPage(r.Context(), int(limit), before, r.URL.Query().Get("status"), r.URL.Query().Get("q"), since)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// runsPage reads one page of runs, newest first, started before seq
// `before` (0: the newest), then their summaries in one query.
func (s *Server) runsPage(ctx context.Context, limit int, before int64, status, q string, since int64) (RunsPage, error) {
	counts, err := s.statusCounts(ctx, since)
	if err != nil {
		return RunsPage{}, err
	}
	f := projections.RunsFilter{StartedAfter: since, Before: before, Text: q}
	if status != "" {
		f.Statuses = []string{jsonview.StatusStored(status)}
	}
	// One more than the page, to know whether another follows.
	rows, err := s.reader(ctx).RunsPage(ctx, f, limit+1)
	if err != nil {
		return RunsPage{}, fmt.Errorf("runs: %w", err)
	}
	page := RunsPage{Runs: []RunView{}, Counts: counts, Priced: len(s.opts.Prices) > 0}
	if len(rows) > limit {
		rows = rows[:limit]
		page.NextBefore = rows[limit-1].StartedSeq
	}
	views, err := s.runViews(ctx, rows)
	if err != nil {
		return RunsPage{}, err
	}
	page.Runs = views
	return page, nil
}

// runViews adds each run's worker and summary to its row, with one query
// for the summaries (through the events' run index) and one for leases.
func (s *Server) runViews(ctx context.Context, rows []projections.RunRow) ([]RunView, error) {
	out := make([]RunView, len(rows))
	if len(rows) == 0 {
		return out, nil
	}
	db := s.db(ctx)
	ids := make([]any, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	in := "?" + strings.Repeat(",?", len(ids)-1)
	sums := map[string]Summary{}
	q := db.Rebind(`SELECT e.run_id, COUNT(*),
			COALESCE(SUM(CASE WHEN e.type = 'tool.called' THEN 1 ELSE 0 END), 0),
			COUNT(u.seq), COALESCE(SUM(u.prompt_tokens), 0), COALESCE(SUM(u.completion_tokens), 0), COALESCE(SUM(u.total_tokens), 0)
		FROM events e LEFT JOIN usage u ON u.seq = e.seq
		WHERE e.run_id IN (` + in + `) GROUP BY e.run_id`)
	rs, err := db.QueryContext(ctx, q, ids...)
	if err != nil {
		return nil, fmt.Errorf("run summaries: %w", err)
	}
	for rs.Next() {
		var id string
		var sm Summary
		if err := rs.Scan(&id, &sm.Events, &sm.ToolCalls, &sm.Usage.Calls, &sm.Usage.PromptTokens, &sm.Usage.CompletionTokens, &sm.Usage.TotalTokens); err != nil {
			rs.Close()
			return nil, fmt.Errorf("run summaries: %w", err)
		}
		sums[id] = sm
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("run summaries: %w", err)
	}
	workers := map[string]string{}
	ls, err := db.QueryContext(ctx, db.Rebind(`SELECT run, worker FROM run_leases WHERE run IN (`+in+`)`), ids...)
	if err != nil {
		return nil, fmt.Errorf("run workers: %w", err)
	}
	for ls.Next() {
		var run, worker string
		if err := ls.Scan(&run, &worker); err != nil {
			ls.Close()
			return nil, err
		}
		workers[run] = worker
	}
	ls.Close()
	if err := ls.Err(); err != nil {
		return nil, err
	}
	models, err := s.runModels(ctx, in, ids)
	if err != nil {
		return nil, err
	}
	if err := s.providerNames(ctx, rows, models); err != nil {
		return nil, err
	}
	now := s.opts.Now()
	for i, r := range rows {
		v := RunView{Run: jsonview.RunOf(r, workers[r.ID]), Summary: sums[r.ID]}
		v.Models, v.Cost = s.costOf(models[r.ID])
		end := now.UnixNano()
		if r.FinishedAt.Valid {
			end = r.FinishedAt.Int64
		}
		if end > r.StartedAt && r.StartedAt > 0 {
			v.DurationMS = (end - r.StartedAt) / int64(time.Millisecond)
		}
		out[i] = v
	}
	return out, nil
}

func (s *Server) runView(ctx context.Context, id string) (RunView, error) {
	row, err := s.reader(ctx).Run(ctx, id)
	if err != nil {
		return RunView{}, err
	}
	vs, err := s.runViews(ctx, []projections.RunRow{row})
	if err != nil {
		return RunView{}, err
	}
	v := vs[0]
	// The same rules as the resume and cancel handlers apply.
	finished, submitted := row.FinishedSeq.Valid, s.submitted(ctx, id)
	v.Actions = &RunActions{Resume: !finished && !submitted && s.liveAllowed(), Cancel: !finished && submitted, Fork: s.liveAllowed()}
	v.Replay = s.lastReplay(id)
	return v, nil
}

func (s *Server) apiRun(w http.ResponseWriter, r *http.Request) {
	v, err := s.runView(r.Context(), r.PathValue("id"))
	if notFound(w, err) {
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// notFound writes err (404 for an unknown id) and reports whether it did.
func notFound(w http.ResponseWriter, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, projections.ErrNotFound), errors.Is(err, sql.ErrNoRows):
		writeError(w, http.StatusNotFound, "%v", err)
	default:
		writeError(w, http.StatusInternalServerError, "%v", err)
	}
	return true
}

// EventsPage is one page of a run's events, in seq order.
type EventsPage struct {
	Events []events.Event `json:"events"`
	// NextAfter is the after= of the next page; 0 when this page is the
	// last one so far (a running run may add more: the stream tails it).
	NextAfter int64 `json:"next_after,omitempty"`
}

func (s *Server) apiRunEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	after, err := intParam(r, "after", 0, 0, 1<<62)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	limit, err := intParam(r, "limit", 200, 1, 2000)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if _, err := s.reader(r.Context()).Run(r.Context(), id); notFound(w, err) {
		return
	}
	evs, err := s.rt.Store().Read(r.Context(), eventlog.Query{RunID: id, FromSeq: after + 1, Limit: int(limit) + 1})
	if err != nil {
		writeError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	page := EventsPage{Events: evs}
	if page.Events == nil {
		page.Events = []events.Event{}
	}
	if len(evs) > int(limit) {
		page.Events = evs[:limit]
		page.NextAfter = evs[limit-1].Seq
	}
	if n := len(page.Events); n > 0 && !s.viewed(w, r, access.Viewed{Run: id, FromSeq: page.Events[0].Seq, ToSeq: page.Events[n-1].Seq, What: events.ViewedEvents}) {
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// sinceParam reads ?since= (a duration like 90m, 24h or 7d) as the
// earliest start time in Unix nanoseconds; 0 without it.
func sinceParam(r *http.Request, now time.Time) (int64, error) {
	v := r.URL.Query().Get("since")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if days, ok := strings.CutSuffix(v, "d"); ok {
		var n int64
		n, err = strconv.ParseInt(days, 10, 64)
		d = time.Duration(n) * 24 * time.Hour
	}
	if err != nil || d <= 0 || d > 100*365*24*time.Hour {
		return 0, fmt.Errorf("since=%q: want a duration like 90m, 24h or 7d", v)
	}
	return now.Add(-d).UnixNano(), nil
}

// statusCounts counts the runs per status started since (0: all).
func (s *Server) statusCounts(ctx context.Context, since int64) (map[string]int64, error) {
	db := s.db(ctx)
	rows, err := db.QueryContext(ctx, db.Rebind(`SELECT status, COUNT(*) FROM runs WHERE started_at >= ? GROUP BY status`), since)
	if err != nil {
		return nil, fmt.Errorf("run counts: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("run counts: %w", err)
		}
		out[jsonview.StatusWord(st)] += n
	}
	return out, rows.Err()
}

// modelUse is one model's token use in a run.
type modelUse struct {
	model              string
	prompt, completion int64
	// unpriced marks a provider's label standing in for a model name.
	unpriced bool
}

// runModels reads the models each run called and their tokens, in one
// query over the usage projection.
func (s *Server) runModels(ctx context.Context, in string, ids []any) (map[string][]modelUse, error) {
	db := s.db(ctx)
	rows, err := db.QueryContext(ctx, db.Rebind(`SELECT run_id, model, COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0)
		FROM usage WHERE run_id IN (`+in+`) GROUP BY run_id, model ORDER BY run_id, model`), ids...)
	if err != nil {
		return nil, fmt.Errorf("run models: %w", err)
	}
	defer rows.Close()
	out := map[string][]modelUse{}
	for rows.Next() {
		var run string
		var u modelUse
		if err := rows.Scan(&run, &u.model, &u.prompt, &u.completion); err != nil {
			return nil, fmt.Errorf("run models: %w", err)
		}
		out[run] = append(out[run], u)
	}
	return out, rows.Err()
}

// providerNames fills in the model of runs whose calls name none (a
// scripted or test provider records only its label): the first
// provider.called of each such run names its provider. Their tokens stay
// unpriced.
func (s *Server) providerNames(ctx context.Context, rows []projections.RunRow, models map[string][]modelUse) error {
	var bare []any
	for _, r := range rows {
		named := false
		for _, u := range models[r.ID] {
			named = named || u.model != ""
		}
		if !named {
			bare = append(bare, r.ID)
		}
	}
	if len(bare) == 0 {
		return nil
	}
	db := s.db(ctx)
	in := "?" + strings.Repeat(",?", len(bare)-1)
	rs, err := db.QueryContext(ctx, db.Rebind(`SELECT run_id, payload FROM events WHERE seq IN (
		SELECT MIN(seq) FROM events WHERE type = ? AND run_id IN (`+in+`) GROUP BY run_id)`), append([]any{events.TypeProviderCalled}, bare...)...)
	if err != nil {
		return fmt.Errorf("run providers: %w", err)
	}
	defer rs.Close()
	for rs.Next() {
		var run string
		var payload []byte
		if err := rs.Scan(&run, &payload); err != nil {
			return fmt.Errorf("run providers: %w", err)
		}
		var e events.ProviderCalled
		if json.Unmarshal(payload, &e) != nil {
			continue
		}
		if name := cmp.Or(e.Model, e.Provider); name != "" {
			models[run] = append(models[run], modelUse{model: name, unpriced: true})
		}
	}
	return rs.Err()
}

// costOf names the models and prices their tokens; no cost unless every
// model used has a price.
func (s *Server) costOf(uses []modelUse) ([]string, *float64) {
	var names []string
	cost, priced := 0.0, len(s.opts.Prices) > 0 && len(uses) > 0
	for _, u := range uses {
		if u.model != "" {
			names = append(names, u.model)
		}
		if u.unpriced {
			continue
		}
		p, ok := s.opts.Prices[u.model]
		if !ok {
			priced = false
			continue
		}
		cost += (float64(u.prompt)*p.InputPerMTok + float64(u.completion)*p.OutputPerMTok) / 1e6
	}
	if !priced {
		return names, nil
	}
	return names, &cost
}
