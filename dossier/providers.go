package dossier

import (
	"context"
	"encoding/json"
	"reflect"
	"sort"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
)

// finishProviders rebuilds each call's request and decodes its response,
// and sums usage per agent.
func (b *builder) finishProviders(ctx context.Context) {
	refs := map[int64]string{}
	resp := map[int64]string{}
	for i, ev := range b.d.Events {
		switch e := b.payloads[i].(type) {
		case *events.ProviderCalled:
			refs[ev.Seq], resp[ev.Seq] = e.RequestRef, e.ResponseRef
		case *events.ProviderFailed:
			refs[ev.Seq] = e.RequestRef
		}
	}
	byAgent := map[string]*AgentUsage{}
	last := map[pair]*ProviderCall{} // (agent, session) -> latest call with a request
	requests := flow.NewRequestLoader(b.blobs)
	for _, c := range b.d.Providers {
		if ref := refs[c.Seq]; ref != "" {
			req, err := requests.Load(ctx, ref)
			if err != nil {
				b.warn("seq %d: request %s: %v", c.Seq, short(ref), err)
			} else {
				c.Request = &req
				k := pair{c.Agent, c.Session}
				if prev := last[k]; prev != nil {
					if n := commonPrefix(prev.Request.Messages, req.Messages); n > 0 {
						c.SharedPrefix, c.PrefixCall = n, prev.Anchor
					}
				}
				last[k] = c
			}
		}
		if ref := resp[c.Seq]; ref != "" {
			if raw, ok := b.blobs.m[ref]; ok {
				var r model.Response
				if err := json.Unmarshal(raw, &r); err != nil {
					b.warn("seq %d: response %s: %v", c.Seq, short(ref), err)
				} else {
					c.Response = &r
				}
			}
		}
		a := byAgent[c.Agent]
		if a == nil {
			a = &AgentUsage{Agent: c.Agent}
			byAgent[c.Agent] = a
		}
		a.LatencyMS += c.LatencyMS
		if c.Failed {
			a.Failures++
			continue
		}
		a.Calls++
		a.Usage = a.Usage.Add(c.Usage)
	}
	for _, a := range byAgent {
		b.d.Agents = append(b.d.Agents, *a)
	}
	sort.Slice(b.d.Agents, func(i, j int) bool { return b.d.Agents[i].Agent < b.d.Agents[j].Agent })
}

// commonPrefix returns how many leading messages a and b share.
func commonPrefix(a, b []model.Message) int {
	n := 0
	for n < len(a) && n < len(b) && reflect.DeepEqual(a[n], b[n]) {
		n++
	}
	return n
}
