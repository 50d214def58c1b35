package rath_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/replay"
)

// Runs of the built-in agent recorded as `rath run` records them (its
// parameter map, with and without the resolved provider, which older
// runs lack) parse into an AgentSpec whose Params give the same map back,
// and a runtime that never built the agent rebuilds and replays them
// from the record alone.
func TestAgentSpec_RecordedRunsRebuildAndReplay(t *testing.T) {
	t.Setenv("RATH_HOME", t.TempDir())
	cassette := filepath.Join(t.TempDir(), "cassette.json")
	if err := os.WriteFile(cassette, []byte(`{"scripted": true, "responses": [
		{"tool_calls": [{"id": "c1", "name": "list_workspace_files", "arguments": {}}]},
		{"content": "One file."}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	recorded := map[string]string{
		"model": "", "provider": "", "system": "Be brief.", "backend": "local", "max_rounds": "8", "stream": "true",
		"kind": "scripted", "cassette": cassette, "tools": "list_workspace_files",
		"approvals": `[{"tool":"run_shell_command"}]`, "memory": `[{"namespace":"user/ana","recall_only":true}]`,
	}
	tests := []struct {
		name         string
		withProvider bool // recorded since flow.ProviderParam exists
	}{
		{"today", true},
		{"before the provider was recorded", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			dir, ws := t.TempDir(), t.TempDir()
			os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a"), 0o644)
			spec, err := rath.ParseAgentSpec(recorded)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range recorded {
				if got := spec.Params()[k]; got != v {
					t.Errorf("parameter %s: %q back, recorded %q", k, got, v)
				}
			}
			rt, err := rath.Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			agent, err := rt.BuildAgent(ctx, &spec, rath.AgentOptions{Mode: rath.LiveMode})
			if err != nil {
				t.Fatal(err)
			}
			params := spec.Params()
			if !tt.withProvider {
				delete(params, flow.ProviderParam)
			}
			in, _ := rt.NewUserSession(ctx, "What is there?")
			if in, err = in.To(ctx, "local", ws); err != nil {
				t.Fatal(err)
			}
			run, err := rt.Start(ctx, rath.AgentWorkflow, agent, in, rath.WithParams(params))
			if err != nil {
				t.Fatal(err)
			}
			rt.Close()

			fresh, err := rath.Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer fresh.Close()
			wf, err := fresh.RecordedWorkflow(ctx, run.ID, rath.ReplayMode)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := replay.Run(ctx, fresh, run.ID, wf)
			if err != nil || !rep.OK() || !rep.Finished {
				t.Fatalf("replay: %+v %v", rep, err)
			}
		})
	}
}

// A parameter of the built-in agent that does not parse or check is an
// *AgentSpecError naming it as the record does, whoever wrote it (a
// flag, a submission, a recorded run), and a named agent survives the
// round trip through the record.
func TestAgentSpec_CheckNamesTheParameter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params map[string]string
		param  string // "" for a spec that checks out
	}{
		{"a named agent", map[string]string{rath.ParamAgent: "reviewer", rath.ParamSystem: "Review."}, ""},
		{"rounds not a number", map[string]string{rath.ParamMaxRounds: "many"}, rath.ParamMaxRounds},
		{"negative rounds", map[string]string{rath.ParamMaxRounds: "-1"}, rath.ParamMaxRounds},
		{"unknown tool", map[string]string{rath.ParamTools: "format_disk"}, rath.ParamTools},
		{"garbled MCP servers", map[string]string{rath.ParamMCP: "{"}, rath.ParamMCP},
		{"garbled approvals", map[string]string{rath.ParamApprovals: "[1]"}, rath.ParamApprovals},
		{"a rule that does not compile", map[string]string{rath.ParamImposed: `[{"tool":"x","policy":"sometimes"}]`}, rath.ParamImposed},
		{"a namespace twice", map[string]string{rath.ParamMemory: `[{"namespace":"a"},{"namespace":"a"}]`}, rath.ParamMemory},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := rath.ParseAgentSpec(tc.params)
			if err == nil {
				err = spec.Check()
			}
			if tc.param == "" {
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range tc.params {
					if got := spec.Params()[k]; got != v {
						t.Errorf("parameter %s: %q back, want %q", k, got, v)
					}
				}
				return
			}
			var se *rath.AgentSpecError
			if !errors.Is(err, rath.ErrAgentSpec) || !errors.As(err, &se) || se.Param != tc.param {
				t.Fatalf("err = %v, want an *AgentSpecError naming %s", err, tc.param)
			}
		})
	}
}
