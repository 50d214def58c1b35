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
	// The backends by the connection they serve, and the server's own
	// processes, from the workers' start to the last run's end; the rest
	// is the submit, the workers' stop, the postmaster and the backends
	// that came and went.
	byApp := func(f func(r result) time.Duration) func(r result) string {
		return func(r result) string {
			if r.serverByApp == nil {
				return dash
			}
			return per(f(r), r)
		}
	}
	for _, app := range byConnection {
		line("  of it "+app, byApp(func(r result) time.Duration { return r.serverByApp[app] }))
	}
	line("  of it other connections", byApp(func(r result) time.Duration {
		var d time.Duration
		for app, cpu := range r.serverByApp {
			if !slices.Contains(byConnection, app) {
				d += cpu
			}
		}
		return d
	}))
	line("  of it the rest", byApp(func(r result) time.Duration {
		d := r.serverCPU
		for _, cpu := range r.serverByApp {
			d -= cpu
		}
		return d
	}))
	line("total CPU ms/step", func(r result) string { return per(r.workerCPU+r.serverCPU, r) })
	line("rath + server CPU ms/step", func(r result) string {
		if !r.haveWorker {
			return dash
		}
		return per(r.workerSelfCPU+r.serverCPU, r)
	})
	line("worker start CPU ms each", func(r result) string {
		if !r.haveWorker || r.startCPU == 0 {
			return dash
		}
		return fmt.Sprintf("%.1f", float64(r.startCPU)/float64(time.Millisecond)/float64(r.workers))
	})
	line("  rath + server CPU ms/step once started", func(r result) string {
		if !r.haveWorker || r.startCPU == 0 {
			return dash
		}
		return per(r.workerSelfCPU+r.serverCPU-r.startCPU, r)
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
	line("tree builder round trips/step", writer(func(r result) float64 { return float64(r.writer.TreeRoundTrips) / float64(r.steps) }))
	line("writer commits/step", writer(func(r result) float64 { return float64(r.writer.Commits) / float64(r.steps) }))
	line("writer round trips/commit", writer(func(r result) float64 { return float64(r.writer.RoundTrips) / float64(max(r.writer.Commits, 1)) }))
	line("batches redone/step", writer(func(r result) float64 { return float64(r.writer.Redone) / float64(r.steps) }))
	line("late commits/step", writer(func(r result) float64 { return float64(r.writer.Late) / float64(r.steps) }))
	line("late misses/step", writer(func(r result) float64 { return float64(r.writer.Missed) / float64(r.steps) }))
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
	printRatios(w, rs)
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

// printRatios prints, for each delay, the fleet's fewest workers against
// its most (the ratios the targets are stated in: steps/s, step gap p50,
// rath + server CPU a step), and each W against its raw baseline.
func printRatios(w io.Writer, rs []result) {
	var delays []time.Duration
	fleet := map[time.Duration][]*result{}
	raws := map[int]*result{}
	for i := range rs {
		r := &rs[i]
		if r.raw {
			raws[r.workers] = r
			continue
		}
		if _, ok := fleet[r.delay]; !ok {
			delays = append(delays, r.delay)
		}
		fleet[r.delay] = append(fleet[r.delay], r)
	}
	rate := func(r *result) float64 { return float64(r.steps) / r.wall.Seconds() }
	cpu := func(r *result) float64 {
		return float64(r.workerSelfCPU+r.serverCPU) / float64(time.Millisecond) / float64(r.steps)
	}
	started := func(r *result) float64 {
		return float64(r.workerSelfCPU+r.serverCPU-r.startCPU) / float64(time.Millisecond) / float64(r.steps)
	}
	for _, d := range delays {
		ps := fleet[d]
		lo, hi := ps[0], ps[0]
		for _, r := range ps {
			if r.workers < lo.workers {
				lo = r
			}
			if r.workers > hi.workers {
				hi = r
			}
		}
		where := "loopback"
		if d > 0 {
			where = delayName(d) + " each way"
		}
		if lo != hi {
			fmt.Fprintf(w, "%s: W=%d / W=%d steps/s %.2f× (%.1f / %.1f); step gap p50 %.2f× (%s / %s ms); rath + server CPU ms/step %.3f / %.3f",
				where, hi.workers, lo.workers, rate(hi)/rate(lo), rate(hi), rate(lo),
				ratio(hi.gaps, lo.gaps), pct(hi.gaps, 50, "-"), pct(lo.gaps, 50, "-"), cpu(hi), cpu(lo))
			if hi.startCPU > 0 && lo.startCPU > 0 {
				fmt.Fprintf(w, ", once started %.3f / %.3f (%.2f×)", started(hi), started(lo), started(hi)/started(lo))
			}
			fmt.Fprintln(w)
		}
		if d != 0 || lo.workers != 1 {
			continue
		}
		// What the machine allows: the most W at W=1's CPU per step, every core busy.
		if perStep := (lo.workerCPU + lo.serverCPU).Seconds() / float64(lo.steps); perStep > 0 {
			ceiling := float64(runtime.NumCPU()) / perStep / rate(lo)
			fmt.Fprintf(w, "ceiling on this machine at W=1's CPU per step (%d cores all busy): %.2f× W=1\n", runtime.NumCPU(), ceiling)
		}
	}
	if len(delays) == 0 {
		return
	}
	for _, r := range fleet[delays[0]] {
		if raw := raws[r.workers]; raw != nil && raw.bytes > 0 && raw.wal > 0 {
			fmt.Fprintf(w, "%s vs %s: bytes %.2f×, WAL %.2f× (targets ≤ 2×)\n", r.name, raw.name,
				float64(r.bytes)/float64(raw.bytes), float64(r.wal)/float64(raw.wal))
		}
	}
}

// ratio is the ratio of two sets' medians (0 when either is empty).
func ratio(a, b []time.Duration) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	med := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[(len(s)+1)/2-1]
	}
	if m := med(b); m > 0 {
		return float64(med(a)) / float64(m)
	}
	return 0
}
