package cli

import (
	"fmt"
	"slices"
	"strings"
)

// parseBackends checks a --backends list against the CLI's backends.
func parseBackends(list []string) ([]string, error) {
	var out []string
	for _, b := range list {
		b = strings.TrimSpace(b)
		if b == "" {
			continue
		}
		if !slices.Contains(cliBackends, b) {
			return nil, fmt.Errorf("backend %q: want some of %s", b, strings.Join(cliBackends, ", "))
		}
		if !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no backend: want some of %s", strings.Join(cliBackends, ", "))
	}
	return out, nil
}
