package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/gorath/rath"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/memory"
	"github.com/spf13/cobra"
)

// memoryParam is the run parameter holding --memory: a JSON list of
// rath.MemoryUse, in flag order.
const memoryParam = rath.ParamMemory

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

// memoryBackendParam is the run parameter holding the memory backend's
// config (a memory.BackendConfig as JSON, never a key: only the name of
// the variable holding it), when it is not the local memory.
const memoryBackendParam = rath.ParamMemoryBackend

// memoryParams records --memory in the run's parameters, with the memory
// backend the config file selects, so a worker and a replay rebuild the
// same agent on the same backend.
func memoryParams(cmd *cobra.Command, values []string, params map[string]string) error {
	uses, err := parseMemoryUses(values)
	if err != nil {
		return usagef(cmd, "--memory %v", err)
	}
	if len(uses) == 0 {
		return nil
	}
	raw, err := json.Marshal(uses)
	if err != nil {
		return err
	}
	params[memoryParam] = string(raw)
	cfg, err := configuredMemory()
	if err != nil {
		return err
	}
	if cfg.Name() != memory.LocalBackend {
		raw, err := json.Marshal(cfg)
		if err != nil {
			return err
		}
		params[memoryBackendParam] = string(raw)
	}
	return nil
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
