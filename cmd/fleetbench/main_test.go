package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath/eventlog"
)

// writerStats reads the line every rath worker prints at exit, in each
// form it has had, so a bench of an older binary still reports.
func TestWriterStats(t *testing.T) {
	for _, c := range []struct {
		name, line string
		want       eventlog.Stats
		ok         bool
	}{
		{"round trips only", "worker w1: event writer: 10 commits, 20 appends, 30 events, 40 round trips\n",
			eventlog.Stats{Commits: 10, Requests: 20, Events: 30, RoundTrips: 40}, true},
		{"redone", "worker w1: event writer: 10 commits, 20 appends, 30 events, 40 round trips, 1 appends staged, 2 staged appends written, 3 batches redone\n",
			eventlog.Stats{Commits: 10, Requests: 20, Events: 30, RoundTrips: 40, Redone: 3}, true},
		{"optimistic", "worker w1: event writer: 10 commits, 20 appends, 30 events, 40 round trips, 1 appends staged, 2 staged appends written, 3 batches redone, 7 optimistic commits, 2 missed\n",
			eventlog.Stats{Commits: 10, Requests: 20, Events: 30, RoundTrips: 40, Redone: 3, Late: 7, Missed: 2}, true},
		{"without the tree's", "worker w1: event writer: 10 commits, 20 appends, 30 events, 40 round trips, 3 batches redone, 7 optimistic commits, 2 missed\n",
			eventlog.Stats{Commits: 10, Requests: 20, Events: 30, RoundTrips: 40, Redone: 3, Late: 7, Missed: 2}, true},
		{"before late commits", "worker w1: event writer: 10 commits, 20 appends, 30 events, 40 round trips, 3 batches redone, 7 optimistic commits, 2 missed, 9 tree round trips\n",
			eventlog.Stats{Commits: 10, Requests: 20, Events: 30, RoundTrips: 40, Redone: 3, Late: 7, Missed: 2, TreeRoundTrips: 9}, true},
		{"current", "worker w1: event writer: 10 commits, 20 appends, 30 events, 40 round trips, 3 batches redone, 7 late commits, 2 missed, 9 tree round trips\n",
			eventlog.Stats{Commits: 10, Requests: 20, Events: 30, RoundTrips: 40, Redone: 3, Late: 7, Missed: 2, TreeRoundTrips: 9}, true},
		{"none", "worker w1: stopped\n", eventlog.Stats{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := writerStats(c.line)
			if ok != c.ok || got != c.want {
				t.Fatalf("writerStats = %+v, %v; want %+v, %v", got, ok, c.want, c.ok)
			}
		})
	}
}

func TestParseDelays(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []time.Duration
		ok   bool
	}{
		{"0", []time.Duration{0}, true},
		{"0,0.5ms,2ms", []time.Duration{0, 500 * time.Microsecond, 2 * time.Millisecond}, true},
		{" 500us , 1ms ,", []time.Duration{500 * time.Microsecond, time.Millisecond}, true},
		{"", nil, false},
		{"2", nil, false}, // a bare number other than 0 has no unit
		{"-1ms", nil, false},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, err := parseDelays(c.in)
			if (err == nil) != c.ok || !slices.Equal(got, c.want) {
				t.Fatalf("parseDelays(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
			}
		})
	}
}

// A delayed phase's processes connect through the proxy, with the rest
// of the DSN as it was.
func TestVia(t *testing.T) {
	const dsn = "postgres://postgres@127.0.0.1:5432/fleet_w1?sslmode=disable"
	got, err := via(dsn, "127.0.0.1:40000")
	if want := "postgres://postgres@127.0.0.1:40000/fleet_w1?sslmode=disable"; err != nil || got != want {
		t.Fatalf("via = %q, %v; want %q", got, err, want)
	}
	if got, err := via(dsn, ""); err != nil || got != dsn {
		t.Fatalf("via without a proxy = %q, %v; want the DSN unchanged", got, err)
	}
	if got, want := phaseName(4, 500*time.Microsecond), "rath W=4 0.5ms"; got != want {
		t.Fatalf("phaseName = %q, want %q", got, want)
	}
	if got, want := dbName(4, 2*time.Millisecond), "fleet_w4_d2000us"; got != want {
		t.Fatalf("dbName = %q, want %q", got, want)
	}
}

// The subscriber's DSN names its connections as the server will show
// them: a name with a space arrives with its space, and the DSN's other
// parameters are kept.
func TestWithAppName(t *testing.T) {
	for _, dsn := range []string{
		"postgres://postgres@127.0.0.1:5432/db?sslmode=disable",
		"postgres://postgres@127.0.0.1:5432/db?sslmode=disable&application_name=other",
		"postgres://postgres@127.0.0.1:5432/db",
	} {
		cfg, err := eventlog.ParsePostgresDSN(withAppName(dsn, subscriberApp))
		if err != nil {
			t.Fatalf("%s: %v", dsn, err)
		}
		if got := cfg.RuntimeParams["application_name"]; got != subscriberApp {
			t.Errorf("%s: application_name %q, want %q", dsn, got, subscriberApp)
		}
		if strings.Contains(dsn, "sslmode=disable") && cfg.TLSConfig != nil {
			t.Errorf("%s: sslmode=disable lost", dsn)
		}
	}
}
