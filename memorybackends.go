package rath

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/gorath/rath/memory"
	"github.com/gorath/rath/memory/vikingmem"
)

// MemoryBackends returns the built-in memory backends: local (the log
// and its BM25 index) and openviking (an OpenViking server, package
// memory/vikingmem).
func MemoryBackends() *memory.Registry {
	return memory.NewRegistry(vikingmem.Backend())
}

// MemoryConfig returns the memory backend the runtime was opened with
// (Options.MemoryBackend).
func (rt *Runtime) MemoryConfig() memory.BackendConfig { return rt.memCfg }

// MemoryBackend opens the runtime's configured memory backend
// (Options.MemoryBackend): its local memory unless a config names
// another.
func (rt *Runtime) MemoryBackend(ctx context.Context) (memory.Memory, error) {
	return rt.OpenMemory(ctx, rt.memCfg)
}

// OpenMemory opens the memory backend cfg names (once per config; a run
// records its config so a worker and a replay open the same). A key the
// backend reads from the environment is added to the runtime's secrets.
// Opening makes no request to a server.
func (rt *Runtime) OpenMemory(ctx context.Context, cfg memory.BackendConfig) (memory.Memory, error) {
	if cfg.Name() == memory.LocalBackend && cfg.URL == "" && cfg.APIKeyEnv == "" {
		return rt.Memory(ctx)
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	rt.backendsMu.Lock()
	defer rt.backendsMu.Unlock()
	if m, ok := rt.opened[string(raw)]; ok {
		return m, nil
	}
	env := memory.BackendEnv{Store: rt.store, Local: rt.Memory, Getenv: os.Getenv,
		AddSecret: func(v string) { rt.secrets.Add(cfg.APIKeyEnv, v) }}
	m, err := rt.memBackends.Open(ctx, env, cfg)
	if err != nil {
		return nil, fmt.Errorf("rath: %w", err)
	}
	if rt.opened == nil {
		rt.opened = map[string]memory.Memory{}
	}
	rt.opened[string(raw)] = m
	return m, nil
}
