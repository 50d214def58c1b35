package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
)

// resolvedProviderParam is the run parameter that holds the provider a
// "rath run" run resolved (flow.Provider.Recordable as JSON: vendor,
// name, model, base URL, sampling, retry, budget; never the key). A
// replay rebuilds the provider from it alone, on any machine.
const resolvedProviderParam = flow.ProviderParam

// recordedProvider reads resolvedProviderParam; ok is false for runs
// recorded before it existed.
func recordedProvider(params map[string]string) (p flow.Provider, ok bool, err error) {
	raw, ok := params[resolvedProviderParam]
	if !ok {
		return p, false, nil
	}
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return p, false, fmt.Errorf("%w: the run's recorded provider: %w", flow.ErrProvider, err)
	}
	return p, true, nil
}

// withRecordedProvider returns params with resolvedProviderParam. A run
// recorded before that parameter existed gets one from its record: the
// provider label and model of its first model call (what its events say),
// over what today's environment and config resolve, if anything. Sampling
// settings and a retry policy that came from a config file are not in
// such a record: they are today's, or the defaults.
func withRecordedProvider(ctx context.Context, rt *rath.Runtime, runID string, params map[string]string) (map[string]string, error) {
	if _, ok := params[resolvedProviderParam]; ok {
		return params, nil
	}
	base := flow.Provider{Name: params["provider"], Vendor: params["kind"], Model: params["model"], Cassette: params["cassette"]}
	if today, err := flow.ResolveProviderConfig(base, flow.ResolveOptions{Models: rath.Models()}); err == nil {
		base = today.Recordable()
	}
	evs, err := rt.Store().Read(ctx, events.Query{RunID: runID, Types: []string{events.TypeProviderCalled, events.TypeProviderFailed}, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(evs) == 1 {
		p, err := evs[0].Decode()
		if err != nil {
			return nil, err
		}
		var label, model string
		switch e := p.(type) {
		case *events.ProviderCalled:
			label, model = e.Provider, e.Model
		case *events.ProviderFailed:
			label, model = e.Provider, e.Model
		}
		// A call's provider label is the config name if there was one,
		// else the vendor.
		if params["provider"] != "" {
			base.Name = label
		} else {
			base.Name, base.Vendor = "", label
		}
		base.Model = model
	}
	b, err := json.Marshal(base)
	if err != nil {
		return nil, err
	}
	out := maps.Clone(params)
	out[resolvedProviderParam] = string(b)
	return out, nil
}

// resolutionNotes compares the provider a "rath run" run recorded with
// what today's environment and config file would resolve for its
// parameters, and says so when they differ: the replay used the record,
// and a resume would call today's. Nothing is said when nothing resolves
// today (an empty environment).
func resolutionNotes(ctx context.Context, rt *rath.Runtime, runID string) []string {
	row, err := rt.Reader().Run(ctx, runID)
	if err != nil || row.Workflow != runWorkflow {
		return nil
	}
	started, err := rt.RunStarted(ctx, runID)
	if err != nil {
		return nil
	}
	params := started.Params
	rec, ok, err := recordedProvider(params)
	if err != nil || !ok {
		return nil
	}
	today, err := flow.ResolveProviderConfig(flow.Provider{Name: params["provider"], Vendor: params["kind"], Model: params["model"], Cassette: params["cassette"]},
		flow.ResolveOptions{Models: rath.Models()})
	if err != nil {
		return nil
	}
	now := today.Recordable()
	if reflect.DeepEqual(now, rec) {
		return nil
	}
	return []string{fmt.Sprintf("the run used provider %s; today's environment and config would resolve %s. The replay used the recorded one",
		describeProvider(rec), describeProvider(now))}
}

func describeProvider(p flow.Provider) string {
	s := p.Vendor
	if p.Name != "" {
		s = p.Name + " (" + p.Vendor + ")"
	}
	s += ", model " + p.Model
	if p.BaseURL != "" {
		s += ", " + p.BaseURL
	}
	if p.Temperature != nil {
		s += fmt.Sprintf(", temperature %g", *p.Temperature)
	}
	if p.TopP != nil {
		s += fmt.Sprintf(", top_p %g", *p.TopP)
	}
	if p.MaxTokens != 0 {
		s += fmt.Sprintf(", max_tokens %d", p.MaxTokens)
	}
	s += fmt.Sprintf(", %d attempts", p.Retry.MaxAttempts)
	return s
}
