package main

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// parseDelays reads -pg-delay: a comma-separated list of durations ("0",
// "500us", "0.5ms", "2ms"), each ≥ 0, one set of phases each.
func parseDelays(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		d, err := time.ParseDuration(f)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("-pg-delay %q: want a list of durations ≥ 0, such as 0,0.5ms,2ms", s)
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-pg-delay %q: want at least one duration", s)
	}
	return out, nil
}

// delayName is how a delay reads in a phase's name and a database's:
// milliseconds, with no trailing zeros.
func delayName(d time.Duration) string {
	return fmt.Sprintf("%gms", float64(d)/float64(time.Millisecond))
}

// phaseName names a fleet phase: its worker count and, past the
// loopback, its delay each way.
func phaseName(w int, d time.Duration) string {
	if d == 0 {
		return fmt.Sprintf("rath W=%d", w)
	}
	return fmt.Sprintf("rath W=%d %s", w, delayName(d))
}

// dbName names a fleet phase's database.
func dbName(w int, d time.Duration) string {
	if d == 0 {
		return fmt.Sprintf("fleet_w%d", w)
	}
	return fmt.Sprintf("fleet_w%d_d%dus", w, d.Microseconds())
}

// via rewrites dsn to connect through addr (host:port), the delay proxy;
// an empty addr leaves it as it is.
func via(dsn, addr string) (string, error) {
	if addr == "" {
		return dsn, nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("DSN: %w", err)
	}
	u.Host = addr
	return u.String(), nil
}
