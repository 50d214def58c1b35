package eval

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/projections"
)

// Dataset is a named set of items, read back from its stream.
type Dataset struct {
	// ID is the leaf hash of the dataset's dataset.created event: it names
	// this dataset even where the name alone would not.
	ID, Name string
	// Source is "runs" or "jsonl".
	Source string
	// Tenant is the tenant the dataset belongs to.
	Tenant     string
	Items      []Item
	CreatedSeq int64
}

// Item is one case of a dataset.
type Item struct {
	ID           string          // stable within the dataset
	Run          string          // "" for a case with no recording yet (from JSONL)
	InputSession string          // the run's input session ("" for JSONL cases)
	LastSeq      int64           // seq of the run's last event when pinned (0 for JSONL)
	LastLeaf     string          // hex leaf hash of that event ("" for JSONL)
	Input, Ideal json.RawMessage // from JSONL; Input is the run's user text for a run
	Metadata     map[string]any
	// Seq is the seq of the item's dataset.item_added event.
	Seq int64
}

// RunSelection chooses recorded runs for a dataset. Zero fields do not
// filter; Runs names runs one by one (each must exist). Without Runs or
// Status, only finished runs are taken: an unfinished run has no last
// event to pin.
type RunSelection struct {
	Workflow string
	Status   []string // stored statuses: rath.RunOK, rath.RunError, "canceled", ...
	Since    time.Time
	Runs     []string
	// Tenant is the tenant whose runs are taken, and the dataset's:
	// a dataset never pins another tenant's run. Empty means the
	// default tenant (events.DefaultTenant).
	Tenant string
}

func (s RunSelection) filter() map[string]string {
	f := map[string]string{}
	if s.Workflow != "" {
		f["workflow"] = s.Workflow
	}
	if len(s.Status) > 0 {
		f["status"] = strings.Join(s.Status, ",")
	}
	if !s.Since.IsZero() {
		f["since"] = s.Since.UTC().Format(time.RFC3339)
	}
	if len(s.Runs) > 0 {
		f["runs"] = strings.Join(s.Runs, ",")
	}
	return f
}

// CreateFromRuns records a dataset of the runs sel chooses, each item
// pinning its run's last event. A name in use is ErrExists; a selection
// of no runs is ErrNotFound.
func CreateFromRuns(ctx context.Context, rt *rath.Runtime, name string, sel RunSelection) (*Dataset, error) {
	if err := checkName("dataset", name); err != nil {
		return nil, err
	}
	if err := events.CheckTenant(sel.Tenant); err != nil {
		return nil, fmt.Errorf("eval: dataset %s: %w", name, err)
	}
	rows, err := selectRuns(ctx, rt, sel)
	if err != nil {
		return nil, err
	}
	evs := []events.Payload{&events.DatasetCreated{Name: name, Source: "runs", Filter: sel.filter(), Tenant: events.TenantField(sel.Tenant)}}
	for _, r := range rows {
		item, err := pinRun(ctx, rt, name, r)
		if err != nil {
			return nil, err
		}
		evs = append(evs, item)
	}
	return appendDataset(ctx, rt, name, evs)
}

func selectRuns(ctx context.Context, rt *rath.Runtime, sel RunSelection) ([]projections.RunRow, error) {
	var rows []projections.RunRow
	if len(sel.Runs) > 0 {
		for _, id := range sel.Runs {
			r, err := rt.Reader().Run(ctx, id)
			if errors.Is(err, projections.ErrNotFound) {
				return nil, fmt.Errorf("%w: run %q (rath runs lists them)", ErrNotFound, id)
			}
			if err != nil {
				return nil, fmt.Errorf("eval: dataset: %w", err)
			}
			rows = append(rows, r)
		}
	} else {
		all, err := rt.Reader().Runs(ctx)
		if err != nil {
			return nil, fmt.Errorf("eval: dataset: %w", err)
		}
		rows = all
	}
	kept := rows[:0:0]
	for _, r := range rows {
		switch {
		case r.Tenant != events.TenantOr(sel.Tenant):
			if len(sel.Runs) > 0 {
				// As if it were not there: it is not this tenant's.
				return nil, fmt.Errorf("%w: run %q (rath runs lists them)", ErrNotFound, r.ID)
			}
			continue
		case sel.Workflow != "" && r.Workflow != sel.Workflow,
			len(sel.Status) > 0 && !slices.Contains(sel.Status, r.Status),
			len(sel.Status) == 0 && len(sel.Runs) == 0 && !r.FinishedSeq.Valid,
			!sel.Since.IsZero() && time.Unix(0, r.StartedAt).Before(sel.Since):
			continue
		}
		kept = append(kept, r)
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("%w: no recorded run matches the selection", ErrNotFound)
	}
	return kept, nil
}

// pinRun makes the item of one run: its last event and the user text of
// its input session.
func pinRun(ctx context.Context, rt *rath.Runtime, dataset string, r projections.RunRow) (*events.DatasetItemAdded, error) {
	evs, err := rt.Store().ReadRun(ctx, r.ID)
	if err != nil {
		return nil, fmt.Errorf("eval: read run %s: %w", r.ID, err)
	}
	if len(evs) == 0 {
		return nil, fmt.Errorf("%w: run %q has no events", ErrNotFound, r.ID)
	}
	last := evs[len(evs)-1]
	item := &events.DatasetItemAdded{Dataset: dataset, Item: r.ID, Run: r.ID, InputSession: r.InputSession,
		LastSeq: last.Seq, LastLeaf: last.Hash}
	if r.InputSession != "" {
		if s, err := rt.Session(ctx, r.InputSession); err == nil {
			var text []string
			for _, c := range s.Chunks() {
				if c.Role == events.RoleUser {
					text = append(text, c.Content)
				}
			}
			b, _ := events.Canonical(strings.Join(text, "\n"))
			item.Input = string(b)
		}
	}
	return item, nil
}

// jsonlCase is one line of a JSONL dataset. OpenAI's evals write input as
// a list of chat messages and ideal as a string or a list of strings.
type jsonlCase struct {
	Input    json.RawMessage `json:"input"`
	Ideal    json.RawMessage `json:"ideal"`
	Metadata json.RawMessage `json:"metadata"`
}

// CreateFromJSONL records a dataset of the cases in r, one JSON object a
// line ({"input": ..., "ideal": ..., "metadata": {...}}); blank lines are
// skipped. A line that is not such an object is ErrSpec naming it, and
// nothing is recorded.
// The dataset is the default tenant's; CreateFromJSONLIn names another.
func CreateFromJSONL(ctx context.Context, rt *rath.Runtime, name string, r io.Reader) (*Dataset, error) {
	return CreateFromJSONLIn(ctx, rt, "", name, r)
}

// CreateFromJSONLIn is CreateFromJSONL for a dataset of tenant's (empty:
// the default tenant's).
func CreateFromJSONLIn(ctx context.Context, rt *rath.Runtime, tenant, name string, r io.Reader) (*Dataset, error) {
	if err := checkName("dataset", name); err != nil {
		return nil, err
	}
	if err := events.CheckTenant(tenant); err != nil {
		return nil, fmt.Errorf("eval: dataset %s: %w", name, err)
	}
	evs := []events.Payload{&events.DatasetCreated{Name: name, Source: "jsonl", Tenant: events.TenantField(tenant)}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var c jsonlCase
		if err := json.Unmarshal(text, &c); err != nil {
			return nil, specErr("line %d: not a JSON object: %v", line, err)
		}
		if len(c.Input) == 0 || string(c.Input) == "null" {
			return nil, specErr("line %d: no \"input\"", line)
		}
		item := &events.DatasetItemAdded{Dataset: name, Item: fmt.Sprintf("case-%d", len(evs))}
		for _, f := range []struct {
			raw json.RawMessage
			dst *string
		}{{c.Input, &item.Input}, {c.Ideal, &item.Ideal}, {c.Metadata, &item.Metadata}} {
			if len(f.raw) == 0 || string(f.raw) == "null" {
				continue
			}
			b, err := events.CanonicalizeJSON(f.raw)
			if err != nil {
				return nil, specErr("line %d: %v", line, err)
			}
			*f.dst = string(b)
		}
		if item.Metadata != "" && !strings.HasPrefix(item.Metadata, "{") {
			return nil, specErr("line %d: \"metadata\" is not an object", line)
		}
		evs = append(evs, item)
	}
	if err := sc.Err(); err != nil {
		return nil, specErr("line %d: %v", line+1, err)
	}
	if len(evs) == 1 {
		return nil, specErr("no cases: want one JSON object a line")
	}
	return appendDataset(ctx, rt, name, evs)
}

func checkName(what, name string) error {
	if name == "" || strings.ContainsFunc(name, func(r rune) bool { return r < ' ' || r == 0x7f }) || len(name) > 200 {
		return specErr("%s name %q: want 1 to 200 printable characters", what, name)
	}
	return nil
}

func appendDataset(ctx context.Context, rt *rath.Runtime, name string, evs []events.Payload) (*Dataset, error) {
	stored, err := rt.Store().Append(ctx, events.DatasetStream(name), eventlog.NoStream, evs...)
	if errors.Is(err, eventlog.ErrConflict) {
		return nil, fmt.Errorf("%w: dataset %q (rath dataset show %s)", ErrExists, name, name)
	}
	if err != nil {
		return nil, fmt.Errorf("eval: record dataset %q: %w", name, err)
	}
	return datasetOf(name, stored)
}

// LoadDataset reads the dataset of that name; ErrNotFound if none.
func LoadDataset(ctx context.Context, rt *rath.Runtime, name string) (*Dataset, error) {
	evs, err := rt.Store().ReadStream(ctx, events.DatasetStream(name), 0)
	if err != nil {
		return nil, fmt.Errorf("eval: read dataset %q: %w", name, err)
	}
	if len(evs) == 0 {
		return nil, fmt.Errorf("%w: dataset %q (rath dataset list)", ErrNotFound, name)
	}
	return datasetOf(name, evs)
}

func datasetOf(name string, evs []events.Event) (*Dataset, error) {
	ds := &Dataset{Name: name}
	for _, ev := range evs {
		p, err := ev.Decode()
		if err != nil {
			return nil, fmt.Errorf("eval: dataset %q: %w", name, err)
		}
		switch e := p.(type) {
		case *events.DatasetCreated:
			ds.ID, ds.Source, ds.CreatedSeq, ds.Tenant = ev.Hash, e.Source, ev.Seq, events.TenantOr(e.Tenant)
		case *events.DatasetItemAdded:
			it := Item{ID: e.Item, Run: e.Run, InputSession: e.InputSession, LastSeq: e.LastSeq, LastLeaf: e.LastLeaf, Seq: ev.Seq}
			if e.Input != "" {
				it.Input = json.RawMessage(e.Input)
			}
			if e.Ideal != "" {
				it.Ideal = json.RawMessage(e.Ideal)
			}
			if e.Metadata != "" {
				if err := json.Unmarshal([]byte(e.Metadata), &it.Metadata); err != nil {
					return nil, fmt.Errorf("eval: dataset %q item %s metadata: %w", name, e.Item, err)
				}
			}
			ds.Items = append(ds.Items, it)
		}
	}
	return ds, nil
}

// DatasetInfo is one dataset as ListDatasets gives it.
type DatasetInfo struct {
	Name       string `json:"name"`
	Source     string `json:"source"`
	Items      int64  `json:"items"`
	CreatedSeq int64  `json:"created_seq"`
	Created    string `json:"created"`
	Tenant     string `json:"tenant"`
}

// ListDatasets lists the datasets, oldest first.
func ListDatasets(ctx context.Context, rt *rath.Runtime) ([]DatasetInfo, error) {
	evs, err := rt.Store().Read(ctx, eventlog.Query{Types: []string{events.TypeDatasetCreated}})
	if err != nil {
		return nil, fmt.Errorf("eval: list datasets: %w", err)
	}
	var out []DatasetInfo
	for _, ev := range evs {
		p, err := ev.Decode()
		if err != nil {
			return nil, fmt.Errorf("eval: list datasets: %w", err)
		}
		e := p.(*events.DatasetCreated)
		v, err := rt.Store().StreamVersion(ctx, events.DatasetStream(e.Name))
		if err != nil {
			return nil, fmt.Errorf("eval: list datasets: %w", err)
		}
		out = append(out, DatasetInfo{Name: e.Name, Source: e.Source, Items: v - 1, CreatedSeq: ev.Seq, Created: ev.At.UTC().Format(time.RFC3339), Tenant: events.TenantOr(e.Tenant)})
	}
	return out, nil
}
