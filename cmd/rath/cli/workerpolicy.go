package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/gorath/rath/fleet"
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

// checkSubmitted refuses the parameters of a submitted "rath run" that
// ask for more than policy allows.
func checkSubmitted(policy fleet.Policy, params map[string]string) error {
	asks := fleet.Asks{Workspace: params["workspace"], Backend: params["backend"], Cassette: params["cassette"]}
	if raw := params[paramMCP]; raw != "" && !policy.SubmittedMCP {
		if err := json.Unmarshal([]byte(raw), &asks.MCP); err != nil {
			return &fleet.RefusedError{What: "MCP servers", Allow: fmt.Sprintf("its %s parameter does not parse: %v", paramMCP, err)}
		}
	}
	return policy.Check(asks)
}
