// Command chatbench runs the chat-thread workload rath is compared on
// with other agent stores: one session, N user messages of 200
// characters, each a durable append; then the latest state, a fork at
// N/2 (the state at a past seq, then one append: the durable
// session.forked event; the median of 9 forks at seqs around N/2; each
// fork is then appended to, untimed, to show it is a session like any
// other), the full history (every
// event of the thread) and 20 past states; and prints the figures as a
// Markdown table, one column per N, after an untimed 200-message thread
// that warms the process up. Peak RSS is the process's, so run one
// N per process for that row to mean one N (-n 2000).
//
//	go run ./cmd/chatbench            # N = 500 and 2000
//	go run ./cmd/chatbench -n 10000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
)

// warmUp is the length of the untimed thread run first.
const warmUp = 200

// forkSamples is how many forks the fork row is the median of.
const forkSamples = 9

type result struct {
	n                                    int
	rawBytes, dbBytes                    int64
	appendAtN, latest, fork, history, at time.Duration
	historyEvents                        int
}

func main() {
	ns := flag.String("n", "500,2000", "thread lengths, comma-separated")
	flag.Parse()
	// A short thread first, untimed: the first thread of a process pays
	// its start-up (the heap growing, the driver's first pages), which is
	// not the workload's cost.
	if _, err := run(context.Background(), warmUp); err != nil {
		fmt.Fprintln(os.Stderr, "chatbench: warm-up:", err)
		os.Exit(1)
	}
	var rows []result
	for _, f := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			fmt.Fprintf(os.Stderr, "chatbench: bad -n %q\n", f)
			os.Exit(2)
		}
		r, err := run(context.Background(), n)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chatbench:", err)
			os.Exit(1)
		}
		rows = append(rows, r)
	}
	print(rows)
}

func run(ctx context.Context, n int) (result, error) {
	dir, err := os.MkdirTemp("", "chatbench")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		return result{}, err
	}
	defer rt.Close()
	r := result{n: n}
	msg := func(i int) string {
		s := fmt.Sprintf("message %d: ", i)
		return s + strings.Repeat("x", 200-len(s))
	}
	s, err := rt.NewUserSession(ctx, msg(0))
	if err != nil {
		return r, err
	}
	r.rawBytes = 200
	seqs := []int64{}
	for i := 1; i < n; i++ {
		t0 := time.Now()
		if s, err = s.Append(ctx, events.Chunk{Role: events.RoleUser, Content: msg(i)}); err != nil {
			return r, err
		}
		if i == n-1 {
			r.appendAtN = time.Since(t0)
		}
		r.rawBytes += 200
		h, _ := rt.Store().Head(ctx)
		seqs = append(seqs, h.Seq)
	}
	if _, err := rt.Session(ctx, s.ID()); err != nil { // warm
		return r, err
	}
	t0 := time.Now()
	if _, err := rt.Session(ctx, s.ID()); err != nil {
		return r, err
	}
	r.latest = time.Since(t0)
	// The fork row is the median of forkSamples forks at seqs around N/2,
	// each the state at its seq and then one append (session.forked,
	// durable): one durable commit alone varies by a millisecond here.
	forks := make([]time.Duration, 0, forkSamples)
	for k := range forkSamples {
		t0 := time.Now()
		at := seqs[min(max(n/2-forkSamples/2+k, 0), len(seqs)-1)]
		past, err := rt.SessionAt(ctx, s.ID(), at)
		if err != nil {
			return r, err
		}
		f, err := past.Fork(ctx)
		if err != nil {
			return r, err
		}
		forks = append(forks, time.Since(t0))
		// A fork is a session like any other (not timed).
		if _, err := f.Append(ctx, events.Chunk{Role: events.RoleUser, Content: msg(-1)}); err != nil {
			return r, err
		}
	}
	slices.Sort(forks)
	r.fork = forks[len(forks)/2]
	t0 = time.Now()
	evs, err := rt.Store().ReadStream(ctx, s.ID(), 1)
	if err != nil {
		return r, err
	}
	r.history, r.historyEvents = time.Since(t0), len(evs)
	t0 = time.Now()
	for k := range 20 {
		if _, err := rt.SessionAt(ctx, s.ID(), seqs[k*(len(seqs)-1)/19]); err != nil {
			return r, err
		}
	}
	r.at = time.Since(t0)
	if err := rt.Close(); err != nil {
		return r, err
	}
	r.dbBytes = dirBytes(dir)
	return r, nil
}

// dirBytes sums the store's files (database, WAL, blobs); the memory
// index is not opened by this workload.
func dirBytes(dir string) int64 {
	var total int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			total += info.Size()
		}
		return nil
	})
	return total
}

// peakRSS reads VmHWM from /proc (Linux); "?" elsewhere.
func peakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return fmt.Sprintf("%.0f MB", float64(kb)/1024)
		}
	}
	return "?"
}

func print(rows []result) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
	head := "| |"
	sep := "|---|"
	for _, r := range rows {
		head += fmt.Sprintf(" N = %d |", r.n)
		sep += "---|"
	}
	fmt.Println(head)
	fmt.Println(sep)
	line := func(name string, cell func(result) string) {
		out := "| " + name + " |"
		for _, r := range rows {
			out += " " + cell(r) + " |"
		}
		fmt.Println(out)
	}
	line("database size", func(r result) string {
		return fmt.Sprintf("%.2f MB (%.1f× the raw text)", float64(r.dbBytes)/1e6, float64(r.dbBytes)/float64(r.rawBytes))
	})
	line("append at N", func(r result) string { return ms(r.appendAtN) })
	line("latest state, warm", func(r result) string { return ms(r.latest) })
	line("fork at N/2 (state at a seq, then one append)", func(r result) string { return ms(r.fork) })
	line("full history", func(r result) string { return fmt.Sprintf("%s (%d events)", ms(r.history), r.historyEvents) })
	line("20 past states", func(r result) string { return fmt.Sprintf("%s (%s each)", ms(r.at), ms(r.at/20)) })
	rss := peakRSS()
	line("peak RSS of the process", func(result) string { return rss })
}
