package cli

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/gorath/rath/flow"
)

// namedAgentSystem returns the system prompt of the config file's agent
// name, as the file says now.
func namedAgentSystem(name string) (string, error) {
	path := flow.DefaultConfigPath(os.Getenv)
	cf, err := flow.LoadConfig(path)
	if err != nil {
		return "", err
	}
	ag, ok := cf.Agents[name]
	if !ok {
		names := slices.Sorted(maps.Keys(cf.Agents))
		if len(names) == 0 {
			return "", fmt.Errorf("no agent %q: the config file (%s) names no agents", name, path)
		}
		return "", fmt.Errorf("no agent %q in the config file (%s); it names %s", name, path, strings.Join(names, ", "))
	}
	if ag.System == "" {
		return DefaultSystemPrompt, nil
	}
	return ag.System, nil
}
