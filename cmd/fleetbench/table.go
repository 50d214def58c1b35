package main

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"text/tabwriter"
	"time"
)

// printTable prints one column per phase.
func printTable(w io.Writer, c config, single, httpCPU time.Duration, rs []result) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	line := func(name string, f func(r result) string) {
		fmt.Fprint(tw, name, "\t")
		for _, r := range rs {
			fmt.Fprint(tw, f(r), "\t")
		}
		fmt.Fprintln(tw)
	}
	per := func(d time.Duration, r result) string {
		return fmt.Sprintf("%.3f", float64(d)/float64(time.Millisecond)/float64(r.steps))
	}
	dash := "-"
	if len(rs) == 0 {
		line = func(string, func(result) string) {}
	}
	line("phase", func(r result) string { return r.name })
	line("steps (R×K)", func(r result) string { return fmt.Sprint(r.steps) })
	line("event rows", func(r result) string { return fmt.Sprint(r.rows) })
	line("wall s", func(r result) string { return fmt.Sprintf("%.2f", r.wall.Seconds()) })
	line("steps/s", func(r result) string { return fmt.Sprintf("%.1f", float64(r.steps)/r.wall.Seconds()) })
	line("step gap p50 ms", func(r result) string { return pct(r.gaps, 50, dash) })
	line("step gap p99 ms", func(r result) string { return pct(r.gaps, 99, dash) })
	line("between steps p50 ms", func(r result) string { return pct(r.between, 50, dash) })
	line("between steps p99 ms", func(r result) string { return pct(r.between, 99, dash) })
	line("worker CPU ms/step", func(r result) string {
		if !r.haveWorker {
			return dash
		}
		return per(r.workerCPU, r)
	})
	line("  of it rath's own", func(r result) string {
		if !r.haveWorker {
			return dash
		}
		return per(r.workerSelfCPU, r)
	})
	line("  of it the commands'", func(r result) string {
		if !r.haveWorker {
			return dash
		}
		return per(r.workerCPU-r.workerSelfCPU, r)
	})
	line("server CPU ms/step", func(r result) string { return per(r.serverCPU, r) })
	line("total CPU ms/step", func(r result) string { return per(r.workerCPU+r.serverCPU, r) })
	line("rath + server CPU ms/step", func(r result) string {
		if !r.haveWorker {
			return dash
		}
		return per(r.workerSelfCPU+r.serverCPU, r)
	})
	line("cores busy", func(r result) string {
		return fmt.Sprintf("%.2f", (r.workerCPU+r.serverCPU).Seconds()/r.wall.Seconds())
	})
	line("bytes/step", func(r result) string { return fmt.Sprint(r.bytes / int64(r.steps)) })
	line("staging bytes/step", func(r result) string { return fmt.Sprint(r.staging / int64(r.steps)) })
	line("server connections opened", func(r result) string { return fmt.Sprint(r.sessions) })
	line("WAL bytes/step", func(r result) string { return fmt.Sprint(r.wal / int64(r.steps)) })
	writer := func(f func(r result) float64) func(r result) string {
		return func(r result) string {
			if !r.haveWriter {
				return dash
			}
			return fmt.Sprintf("%.2f", f(r))
		}
	}
	line("writer round trips/step", writer(func(r result) float64 { return float64(r.writer.RoundTrips) / float64(r.steps) }))
	line("writer commits/step", writer(func(r result) float64 { return float64(r.writer.Commits) / float64(r.steps) }))
	line("writer round trips/commit", writer(func(r result) float64 { return float64(r.writer.RoundTrips) / float64(max(r.writer.Commits, 1)) }))
	line("appends staged/step", writer(func(r result) float64 { return float64(r.writer.Staged) / float64(r.steps) }))
	line("batches redone/step", writer(func(r result) float64 { return float64(r.writer.Redone) / float64(r.steps) }))
	line("optimistic commits/step", writer(func(r result) float64 { return float64(r.writer.Optimistic) / float64(r.steps) }))
	line("optimistic misses/step", writer(func(r result) float64 { return float64(r.writer.Missed) / float64(r.steps) }))
	line("writer events/commit", writer(func(r result) float64 { return float64(r.writer.Events) / float64(max(r.writer.Commits, 1)) }))
	line("seq lag p50 ms", func(r result) string { return pct(r.lags, 50, dash) })
	line("seq lag p99 ms", func(r result) string { return pct(r.lags, 99, dash) })
	line("of the workers' events p50 ms", func(r result) string { return pct(r.workerLags, 50, dash) })
	line("of the workers' events p99 ms", func(r result) string { return pct(r.workerLags, 99, dash) })
	line("append → delivery p50 ms", func(r result) string { return pct(r.appendLags, 50, dash) })
	line("append → delivery p99 ms", func(r result) string { return pct(r.appendLags, 99, dash) })
	line("batch submit CPU ms/run", func(r result) string {
		if !r.haveSubmit {
			return dash
		}
		return fmt.Sprintf("%.2f", float64(r.submitCPU)/float64(time.Millisecond)/float64(c.runs))
	})
	tw.Flush()
	if single > 0 {
		fmt.Fprintf(w, "single submit CPU ms/run (mean of %d processes): %.1f\n", c.singles, float64(single)/float64(time.Millisecond))
	}
	if httpCPU > 0 {
		fmt.Fprintf(w, "POST /api/runs CPU ms/run of the rath serve process (mean of %d): %.2f\n", c.httpRuns, float64(httpCPU)/float64(time.Millisecond))
	}
	// Ratios the targets are stated in.
	var w1, w4, raw1, raw4 *result
	for i := range rs {
		switch rs[i].name {
		case "rath W=1":
			w1 = &rs[i]
		case "rath W=4":
			w4 = &rs[i]
		case "raw W=1":
			raw1 = &rs[i]
		case "raw W=4":
			raw4 = &rs[i]
		}
	}
	if w1 != nil && w4 != nil {
		fmt.Fprintf(w, "W=4 / W=1 steps/s: %.2f× (target ≥ 2.5×)\n", w1.wall.Seconds()/w4.wall.Seconds()*float64(w4.steps)/float64(w1.steps))
		// What the machine allows: W=4 at W=1's CPU per step, every core busy.
		perStep := (w1.workerCPU + w1.serverCPU).Seconds() / float64(w1.steps)
		if perStep > 0 {
			ceiling := float64(runtime.NumCPU()) / perStep / (float64(w1.steps) / w1.wall.Seconds())
			fmt.Fprintf(w, "ceiling on this machine at W=1's CPU per step (%d cores all busy): %.2f× W=1\n", runtime.NumCPU(), ceiling)
		}
	}
	for _, p := range [][2]*result{{w1, raw1}, {w4, raw4}} {
		if p[0] != nil && p[1] != nil && p[1].bytes > 0 && p[1].wal > 0 {
			fmt.Fprintf(w, "%s vs %s: bytes %.2f×, WAL %.2f× (targets ≤ 2×)\n", p[0].name, p[1].name,
				float64(p[0].bytes)/float64(p[1].bytes), float64(p[0].wal)/float64(p[1].wal))
		}
	}
}

// pct is the p-th percentile of ds in milliseconds.
func pct(ds []time.Duration, p int, none string) string {
	if len(ds) == 0 {
		return none
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := min(len(s)-1, (len(s)*p+99)/100-1)
	return fmt.Sprintf("%.2f", float64(s[max(i, 0)])/float64(time.Millisecond))
}
