package proccpu

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc/PID/stat's times (USER_HZ, 100 on
// Linux everywhere).
const clockTick = 10 * time.Millisecond

// Process is the CPU (user and system) process pid used so far.
func Process(pid int) (time.Duration, error) {
	_, t, err := statTicks(pid, false)
	return time.Duration(t) * clockTick, err
}

// Tree is the CPU process pid and its children used so far: its own, its
// reaped children's and its live children's. For a PostgreSQL server's
// postmaster, that is the server: every backend and helper is its child.
func Tree(pid int) (time.Duration, error) {
	if pid <= 0 {
		return 0, fmt.Errorf("proccpu: no process %d", pid)
	}
	// A child reaped while the children are read would be in neither
	// count (gone from /proc, not yet in the parent's children's time when
	// that was read): the sum is kept only when the parent's count did not
	// move across the read. Missing a server's busiest backend so had made
	// a benchmark's server CPU half the truth.
	for try := 0; ; try++ {
		_, before, err := statTicks(pid, true)
		if err != nil {
			return 0, err
		}
		kids, err := children(pid)
		if err != nil {
			return 0, err
		}
		total := before
		for _, k := range kids {
			if ppid, t, err := statTicks(k, false); err == nil && ppid == pid {
				total += t
			}
		}
		_, after, err := statTicks(pid, true)
		if err != nil {
			return 0, err
		}
		if after == before || try == 20 {
			return time.Duration(total) * clockTick, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// children lists pid's live children: from its threads' children files
// (a child belongs to the thread that forked it), small reads, or, on a
// kernel without them, every process, of which Tree keeps those whose
// parent is pid.
func children(pid int) ([]int, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, fmt.Errorf("proccpu: %w", err)
	}
	var out []int
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		if errors.Is(err, fs.ErrNotExist) && len(out) == 0 {
			return allProcesses()
		}
		for _, f := range strings.Fields(string(b)) {
			if k, err := strconv.Atoi(f); err == nil {
				out = append(out, k)
			}
		}
	}
	return out, nil
}

// allProcesses lists every process's pid.
func allProcesses() ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("proccpu: %w", err)
	}
	var out []int
	for _, e := range ents {
		if k, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, k)
		}
	}
	return out, nil
}

// statTicks reads a process's parent and its CPU ticks from
// /proc/PID/stat: its own, and with children those of its reaped
// children too.
func statTicks(pid int, children bool) (ppid int, t int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("proccpu: %w", err)
	}
	// The command name, in parentheses, may hold spaces.
	end := bytes.LastIndexByte(b, ')')
	if end < 0 || end+2 > len(b) {
		return 0, 0, fmt.Errorf("proccpu: /proc/%d/stat is malformed", pid)
	}
	f := strings.Fields(string(b[end+2:]))
	if len(f) < 15 {
		return 0, 0, fmt.Errorf("proccpu: /proc/%d/stat is malformed", pid)
	}
	ppid, _ = strconv.Atoi(f[1])
	for i, idx := range []int{11, 12, 13, 14} { // utime stime cutime cstime, after the name
		if i >= 2 && !children {
			break
		}
		v, _ := strconv.ParseInt(f[idx], 10, 64)
		t += v
	}
	return ppid, t, nil
}
