package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
)

// judgeVersion is the judge scorer's version: how it renders its prompt
// and reads a verdict.
const judgeVersion = "1"

// judgeSession is the session a judge's provider.called event names: its
// usage rows are the judges'.
const judgeSession = "eval.judge"

// JudgeOptions are where a judge finds its model and whether it asks it
// again.
type JudgeOptions struct {
	// Runtime records the judge's calls and answers from them. Required
	// for a judge.
	Runtime *rath.Runtime
	// Live asks the model again even when the log holds an answer to the
	// same request (the new answer is recorded and used from then on).
	Live bool
	// Getenv reads the environment (API keys); nil means os.Getenv.
	Getenv func(string) string
	// ConfigPath is the config file naming providers; empty means the
	// default ($RATH_HOME/config.json).
	ConfigPath string
}

// judgeFile is a judge's file: a prompt, and a provider in the config
// file's terms, by name or written out.
//
//	{"prompt": "Grade the answer {{output}} to {{input}} against {{ideal}}...",
//	 "provider": "local"}
//	{"prompt": "...", "provider": {"kind": "openai", "base_url": "http://127.0.0.1:8000/v1",
//	                               "model": "judge", "api_key_env": "JUDGE_KEY"}}
type judgeFile struct {
	Prompt      string          `json:"prompt"`
	Provider    json.RawMessage `json:"provider,omitempty"`
	Model       string          `json:"model,omitempty"`
	Temperature *float64        `json:"temperature,omitempty"`
}

// Judge is a scorer that asks a model for a verdict. Its prompt may name
// {{input}}, {{output}} and {{ideal}}; the model answers with JSON
// {"score": 0..1, "reason": "..."}. Each call is recorded as a
// provider.called event on the stream "judge:DIGEST" (DIGEST the SHA-256
// of the request and the model's identity), in the eval run of the
// experiment; a later score of the same request answers from that record.
type Judge struct {
	file     string
	cfg      judgeFile
	canon    string // canonical judge file, hashed into ConfigHash
	provider flow.Provider
	opts     JudgeOptions
	calls    atomic.Int64
	mu       sync.Mutex   // guards client
	client   model.Client // built at the first live call
}

// NewJudge reads a judge file.
func NewJudge(file string, opts JudgeOptions) (*Judge, error) {
	if opts.Runtime == nil {
		return nil, specErr("judge:%s: no runtime to record its calls", file)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, specErr("judge:%s: %v", file, err)
	}
	var cfg judgeFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return nil, specErr("judge:%s: %v", file, err)
	}
	if strings.TrimSpace(cfg.Prompt) == "" {
		return nil, specErr("judge:%s: no \"prompt\"", file)
	}
	canon, err := events.CanonicalizeJSON(b)
	if err != nil {
		return nil, specErr("judge:%s: %v", file, err)
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	p := flow.Provider{Model: cfg.Model, Temperature: cfg.Temperature}
	switch {
	case len(cfg.Provider) == 0:
	case cfg.Provider[0] == '"':
		if err := json.Unmarshal(cfg.Provider, &p.Name); err != nil {
			return nil, specErr("judge:%s: provider: %v", file, err)
		}
	default:
		var pc flow.ProviderConfig
		if err := json.Unmarshal(cfg.Provider, &pc); err != nil {
			return nil, specErr("judge:%s: provider: %v", file, err)
		}
		if pc.APIKey != "" {
			return nil, specErr("judge:%s: a key does not go in a judge file: name its variable with api_key_env", file)
		}
		p.Vendor, p.BaseURL, p.Cassette, p.MaxTokens = pc.Vendor, pc.BaseURL, pc.Cassette, pc.MaxTokens
		if p.Model == "" {
			p.Model = pc.Model
		}
		if p.Temperature == nil {
			p.Temperature = pc.Temperature
		}
		if pc.APIKeyEnv != "" {
			p.APIKey = getenv(pc.APIKeyEnv)
		}
	}
	resolved, err := flow.ResolveProviderConfig(p, flow.ResolveOptions{Getenv: getenv, ConfigPath: opts.ConfigPath, Models: opts.Runtime.Models()})
	if err != nil {
		return nil, specErr("judge:%s: %v", file, err)
	}
	if resolved.APIKey != "" {
		// The judge's key is the runtime's secret from now on: a model
		// that echoes it reaches neither the log nor the terminal.
		name := "judge key"
		if len(cfg.Provider) > 0 && cfg.Provider[0] == '{' {
			var pc flow.ProviderConfig
			_ = json.Unmarshal(cfg.Provider, &pc)
			name = pc.APIKeyEnv
		}
		opts.Runtime.Secrets().Add(name, resolved.APIKey)
	}
	if resolved.Model == "" {
		return nil, specErr("judge:%s: no model: give \"model\" or a provider that has one", file)
	}
	return &Judge{file: file, cfg: cfg, canon: string(canon), provider: resolved, opts: opts}, nil
}

func (j *Judge) Name() string    { return "judge:" + j.file }
func (j *Judge) Version() string { return judgeVersion }

// ConfigHash hashes the judge file and the model it resolved to.
func (j *Judge) ConfigHash() string {
	return configHash("judge", j.canon, j.provider.Vendor, j.provider.Model)
}

// ModelCalls is how many times the judge asked its model.
func (j *Judge) ModelCalls() int64 { return j.calls.Load() }

// Score asks for a verdict on the run's answer, from the record when the
// log holds an answer to this exact request.
func (j *Judge) Score(ctx context.Context, in ScoreInput) (Score, error) {
	text, ev, ok := in.Output()
	if !ok {
		return Score{Value: 0, Reason: "the run gave no answer"}, nil
	}
	prompt := strings.NewReplacer("{{input}}", in.InputText(), "{{output}}", text, "{{ideal}}", in.Ideal()).Replace(j.cfg.Prompt)
	req := model.Request{Model: j.provider.Model, Messages: []model.Message{{Role: events.RoleUser, Content: prompt}},
		Sampling: model.Sampling{Temperature: j.provider.Temperature, MaxTokens: j.provider.MaxTokens}}
	reqBytes, err := events.Canonical(req)
	if err != nil {
		return Score{}, err
	}
	digest := configHash("judge-request", j.provider.Vendor, string(reqBytes))
	stream := "judge:" + digest
	resp, call, err := j.answer(ctx, in.recorder(j.opts.Runtime.Store()), stream, digest, req, reqBytes)
	if err != nil {
		return Score{}, err
	}
	value, reason, err := verdict(resp.Content)
	if err != nil {
		return Score{}, fmt.Errorf("eval: judge %s on item %s: %w", j.file, in.Item.ID, err)
	}
	reason = j.opts.Runtime.Secrets().String(reason)
	return Score{Value: value, Reason: reason, Reads: []events.ScoreRead{readOf(ev), readOf(call)}}, nil
}

// answer returns the model's response to req: the last one recorded on
// stream, or (none recorded, or Live) a new call, recorded there by rec.
func (j *Judge) answer(ctx context.Context, rec eventlog.Appender, stream, digest string, req model.Request, reqBytes []byte) (model.Response, events.Event, error) {
	store := rec.Store()
	if !j.opts.Live {
		evs, err := store.ReadStream(ctx, stream, 0)
		if err != nil {
			return model.Response{}, events.Event{}, fmt.Errorf("eval: judge record: %w", err)
		}
		for i := len(evs) - 1; i >= 0; i-- {
			p, err := evs[i].Decode()
			if err != nil {
				continue
			}
			pc, ok := p.(*events.ProviderCalled)
			if !ok || pc.ResponseRef == "" {
				continue
			}
			b, err := store.GetBlob(ctx, pc.ResponseRef)
			if err != nil {
				return model.Response{}, events.Event{}, fmt.Errorf("eval: judge record at seq %d: %w", evs[i].Seq, err)
			}
			var resp model.Response
			if err := json.Unmarshal(b, &resp); err != nil {
				return model.Response{}, events.Event{}, fmt.Errorf("eval: judge record at seq %d: %w", evs[i].Seq, err)
			}
			return resp, evs[i], nil
		}
	}
	client, err := j.modelClient()
	if err != nil {
		return model.Response{}, events.Event{}, err
	}
	start := time.Now()
	j.calls.Add(1)
	resp, err := client.Complete(ctx, req)
	if err != nil {
		return model.Response{}, events.Event{}, fmt.Errorf("eval: judge %s: model call: %w", j.file, err)
	}
	respBytes, err := events.Canonical(resp)
	if err != nil {
		return model.Response{}, events.Event{}, err
	}
	// Session names the judge, not the stream: a call on a stream that is
	// not its session's is a side call, outside every session's usage.
	call := &events.ProviderCalled{Session: judgeSession, Agent: "eval.judge", Provider: j.provider.Name, Model: j.provider.Model,
		RequestRef: eventlog.BlobHash(reqBytes), ResponseRef: eventlog.BlobHash(respBytes), Digest: digest,
		Usage: resp.Usage, LatencyMS: time.Since(start).Milliseconds(), Attempt: 1}
	stored, err := rec.AppendWrites(ctx, eventlog.Write{Stream: stream, Expected: eventlog.AnyVersion, Events: []events.Payload{call}, Blobs: [][]byte{reqBytes, respBytes}})
	if err != nil {
		return model.Response{}, events.Event{}, fmt.Errorf("eval: record judge call: %w", err)
	}
	return resp, stored[0], nil
}

func (j *Judge) modelClient() (model.Client, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.client == nil {
		c, err := j.opts.Runtime.Models().New(j.provider.Vendor, model.Config{Model: j.provider.Model, BaseURL: j.provider.BaseURL,
			APIKey: j.provider.APIKey, MaxTokens: j.provider.MaxTokens, Cassette: j.provider.Cassette})
		if err != nil {
			return nil, fmt.Errorf("eval: judge %s: %w", j.file, err)
		}
		j.client = c
	}
	return j.client, nil
}

// verdict reads {"score": N, "reason": "..."} from a judge's answer (the
// first JSON object in it), or an answer that is a bare number.
func verdict(text string) (float64, string, error) {
	text = strings.TrimSpace(text)
	if v, err := strconv.ParseFloat(text, 64); err == nil {
		return checkValue(v, "")
	}
	start, end := strings.Index(text, "{"), strings.LastIndex(text, "}")
	if start < 0 || end < start {
		return 0, "", errors.New("the judge's answer holds no JSON verdict {\"score\": N, \"reason\": \"...\"}")
	}
	var v struct {
		Score  *float64 `json:"score"`
		Reason string   `json:"reason"`
	}
	if err := json.Unmarshal([]byte(text[start:end+1]), &v); err != nil || v.Score == nil {
		return 0, "", errors.New("the judge's answer holds no JSON verdict {\"score\": N, \"reason\": \"...\"}")
	}
	return checkValue(*v.Score, v.Reason)
}

func checkValue(v float64, reason string) (float64, string, error) {
	if v < 0 || v > 1 {
		return 0, "", fmt.Errorf("the judge's score %v is outside 0 to 1", v)
	}
	return v, reason, nil
}
