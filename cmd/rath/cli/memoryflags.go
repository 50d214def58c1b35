package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/gorath/rath"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/memory"
	"github.com/spf13/cobra"
)

// recallOnlySuffix makes a --memory namespace recall only.
const recallOnlySuffix = ":recall"

func addMemoryFlag(cmd *cobra.Command, uses *[]string) {
	cmd.Flags().StringArrayVar(uses, "memory", nil, "a memory namespace (like user/ana): recall from it before the agent's turns and commit the session to it at the end; NS"+recallOnlySuffix+" recalls only; repeatable")
}

// parseMemoryUses checks --memory values.
func parseMemoryUses(values []string) ([]rath.MemoryUse, error) {
	var uses []rath.MemoryUse
	seen := map[string]bool{}
	for _, v := range values {
		ns, recallOnly := strings.CutSuffix(v, recallOnlySuffix)
		if ns == "" || strings.TrimSpace(ns) != ns || strings.ContainsAny(ns, "\x00\n\r") {
			return nil, fmt.Errorf("%q: want a namespace like user/ana, optionally followed by %s", v, recallOnlySuffix)
		}
		if seen[ns] {
			return nil, fmt.Errorf("namespace %q given twice", ns)
		}
		seen[ns] = true
		uses = append(uses, rath.MemoryUse{Namespace: ns, RecallOnly: recallOnly})
	}
	return uses, nil
}

// memoryUses checks --memory (rath.AgentSpec.Memory) and returns the
// memory backend the config file selects (rath.AgentSpec.MemoryBackend,
// nil for the local memory), so a worker and a replay rebuild the same
// agent on the same backend.
func memoryUses(cmd *cobra.Command, values []string) ([]rath.MemoryUse, *memory.BackendConfig, error) {
	uses, err := parseMemoryUses(values)
	if err != nil {
		return nil, nil, usagef(cmd, "--memory %v", err)
	}
	if len(uses) == 0 {
		return nil, nil, nil
	}
	cfg, err := configuredMemory()
	if err != nil {
		return nil, nil, err
	}
	if cfg.Name() == memory.LocalBackend {
		return uses, nil, nil
	}
	return uses, &cfg, nil
}

// configuredMemory is the config file's memory backend; the local memory
// if it names none.
func configuredMemory() (memory.BackendConfig, error) {
	cf, err := flow.LoadConfig(flow.DefaultConfigPath(os.Getenv))
	if err != nil {
		return memory.BackendConfig{}, err
	}
	if cf.Memory == nil {
		return memory.BackendConfig{}, nil
	}
	return *cf.Memory, nil
}
