//go:build linux

package storetest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// postgresCPU is the CPU (user and system) of every process on the
// machine named postgres, from /proc: in a benchmark, its one cluster's
// backends and helpers. A tick is 10 ms (USER_HZ is 100 on Linux).
func postgresCPU() time.Duration {
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	var ticks int64
	for _, p := range dirs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open || s[open+1:end] != "postgres" {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + st
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}
