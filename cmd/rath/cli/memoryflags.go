package cli

import (
	"context"
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
// memoryUse, in flag order.
const memoryParam = "memory"

// memoryUse is one --memory flag: a namespace the agent recalls from
// before its first turn and, unless RecallOnly, commits its session to
// when it ends.
type memoryUse struct {
	Namespace  string `json:"namespace"`
	RecallOnly bool   `json:"recall_only,omitempty"`
}

// recallOnlySuffix makes a --memory namespace recall only.
const recallOnlySuffix = ":recall"

func addMemoryFlag(cmd *cobra.Command, uses *[]string) {
	cmd.Flags().StringArrayVar(uses, "memory", nil, "a memory namespace (like user/ana): recall from it before the agent's turns and commit the session to it at the end; NS"+recallOnlySuffix+" recalls only; repeatable")
}

// parseMemoryUses checks --memory values.
func parseMemoryUses(values []string) ([]memoryUse, error) {
	var uses []memoryUse
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
		uses = append(uses, memoryUse{Namespace: ns, RecallOnly: recallOnly})
	}
	return uses, nil
}

// memoryBackendParam is the run parameter holding the memory backend's
// config (a memory.BackendConfig as JSON, never a key: only the name of
// the variable holding it), when it is not the local memory.
const memoryBackendParam = "memory_backend"

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

// memoryOptions gives the agent of a run the memory its parameters name.
// In a replay the recalls and commits are answered from the record; the
// memory is still opened, as the agent needs one, but not searched.
func memoryOptions(ctx context.Context, rt *rath.Runtime, params map[string]string) ([]flow.AgentOption, error) {
	raw := params[memoryParam]
	if raw == "" {
		return nil, nil
	}
	var uses []memoryUse
	if err := json.Unmarshal([]byte(raw), &uses); err != nil {
		return nil, fmt.Errorf("run parameter %s: %w", memoryParam, err)
	}
	if len(uses) == 0 {
		return nil, nil
	}
	var cfg memory.BackendConfig
	if raw := params[memoryBackendParam]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
			return nil, fmt.Errorf("run parameter %s: %w", memoryBackendParam, err)
		}
	}
	mem, err := rt.OpenMemory(ctx, cfg)
	if err != nil {
		return nil, err
	}
	opts := make([]flow.AgentOption, 0, len(uses))
	for _, u := range uses {
		opts = append(opts, flow.WithMemory(mem, flow.MemoryOptions{Namespace: u.Namespace, Commit: !u.RecallOnly}))
	}
	return opts, nil
}
