package rath

import (
	"testing"

	"github.com/gorath/rath/events"
)

// nextSandboxAndUsage folds a session's events as the projections do:
// the event that starts the session sets its sandbox and usage, a
// placement its sandbox, a model call on its own stream one call more.
func TestNextSandboxAndUsage(t *testing.T) {
	u := func(prompt, calls int64) events.Usage {
		return events.Usage{PromptTokens: prompt, TotalTokens: prompt, Calls: calls}
	}
	running := sandboxAndUsage{backend: "local", spec: "/w", usage: u(10, 1)}
	for _, tc := range []struct {
		name   string
		stream string
		p      events.Payload
		want   sandboxAndUsage
	}{
		{"created", "s", &events.SessionCreated{Session: "s"}, sandboxAndUsage{}},
		{"forked", "s", &events.SessionForked{Session: "s", Placement: events.Placement{Backend: "bwrap", Spec: "/b"}, Usage: u(5, 2)},
			sandboxAndUsage{backend: "bwrap", spec: "/b", usage: u(5, 2)}},
		{"detached keeps no usage", "s", &events.SessionDetached{Session: "s", Placement: events.Placement{Backend: "local", Spec: "/d"}},
			sandboxAndUsage{backend: "local", spec: "/d"}},
		{"merged", "s", &events.SessionMerged{Session: "s", Usage: u(7, 3)}, sandboxAndUsage{usage: u(7, 3)}},
		{"placed", "s", &events.SessionPlaced{Session: "s", Backend: "bwrap", Spec: "/p"},
			sandboxAndUsage{backend: "bwrap", spec: "/p", usage: u(10, 1)}},
		{"a call adds one", "s", &events.ProviderCalled{Session: "s", Usage: u(4, 9)},
			sandboxAndUsage{backend: "local", spec: "/w", usage: u(14, 2)}},
		{"a call on a side stream counts in no total", "side", &events.ProviderCalled{Session: "s", Usage: u(4, 1)}, running},
		{"another session's fork", "s", &events.SessionForked{Session: "t", Usage: u(1, 1)}, running},
		{"an event that cannot be opened", "s", nil, running},
		{"a chunk", "s", &events.ChunkAppended{Session: "s"}, running},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextSandboxAndUsage(running, "s", tc.stream, tc.p); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
