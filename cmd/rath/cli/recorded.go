package cli

import (
	"context"
	"fmt"
	"reflect"

	"github.com/gorath/rath"
	"github.com/gorath/rath/flow"
)

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
	spec, err := rath.ParseAgentSpec(started.Params)
	if err != nil || spec.Resolved == nil {
		return nil
	}
	rec := *spec.Resolved
	today, err := flow.ResolveProviderConfig(spec.Provider, flow.ResolveOptions{Models: rt.Models()})
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
