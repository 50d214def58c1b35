package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/gorath/rath/events"
)

// builtinVersion is the version of every built-in scorer but the judge.
const builtinVersion = "1"

// SpecOptions are what ParseSpec needs beyond the spec: a judge's runtime,
// environment and config file.
type SpecOptions struct {
	Judge JudgeOptions
}

// Specs lists the built-in scorer specs, for help texts.
const Specs = "exact:TEXT, contains:TEXT, regex:RE, json_schema:FILE, tool_called:NAME, no_tool_error, max_tokens:N, max_latency:DURATION, judge:FILE"

// ParseSpec builds a built-in scorer from its spec: exact:TEXT (the
// answer, trimmed, equals TEXT, or the item's ideal when TEXT is empty),
// contains:TEXT, regex:RE, json_schema:FILE (the answer is JSON valid
// against the schema), tool_called:NAME, no_tool_error, max_tokens:N (the
// run's model calls used at most N tokens), max_latency:DURATION (from the
// run's start to its end) and judge:FILE (see JudgeOptions). A bad spec is
// ErrSpec.
func ParseSpec(spec string, opts SpecOptions) (Scorer, error) {
	kind, arg, hasArg := strings.Cut(spec, ":")
	need := func() error {
		if !hasArg || (arg == "" && kind != "exact") {
			return specErr("scorer %q needs a value: %s:VALUE", spec, kind)
		}
		return nil
	}
	switch kind {
	case "exact", "contains":
		if err := need(); err != nil {
			return nil, err
		}
		return &textScorer{kind: kind, text: arg}, nil
	case "regex":
		if err := need(); err != nil {
			return nil, err
		}
		re, err := regexp.Compile(arg)
		if err != nil {
			return nil, specErr("scorer %q: %v", spec, err)
		}
		return &regexScorer{re: re}, nil
	case "json_schema":
		if err := need(); err != nil {
			return nil, err
		}
		return newSchemaScorer(arg)
	case "tool_called":
		if err := need(); err != nil {
			return nil, err
		}
		return &toolCalledScorer{tool: arg}, nil
	case "no_tool_error":
		if hasArg {
			return nil, specErr("scorer %q takes no value", spec)
		}
		return noToolErrorScorer{}, nil
	case "max_tokens":
		if err := need(); err != nil {
			return nil, err
		}
		n, err := strconv.ParseInt(arg, 10, 64)
		if err != nil || n < 0 {
			return nil, specErr("scorer %q: want a count of tokens, 0 or more", spec)
		}
		return &maxTokensScorer{max: n}, nil
	case "max_latency":
		if err := need(); err != nil {
			return nil, err
		}
		d, err := time.ParseDuration(arg)
		if err != nil || d <= 0 {
			return nil, specErr("scorer %q: want a positive duration (30s, 2m)", spec)
		}
		return &maxLatencyScorer{max: d}, nil
	case "judge":
		if err := need(); err != nil {
			return nil, err
		}
		return NewJudge(arg, opts.Judge)
	}
	return nil, specErr("scorer %q: unknown kind %q; the built-in ones are %s", spec, kind, Specs)
}

// pass is a boolean verdict as a value.
func pass(ok bool) float64 {
	if ok {
		return 1
	}
	return 0
}

// answerScore scores the run's answer with check; a run with no answer
// scores 0.
func answerScore(in ScoreInput, check func(text string) (bool, string)) Score {
	text, ev, ok := in.Output()
	if !ok {
		return Score{Value: 0, Reason: "the run gave no answer"}
	}
	good, reason := check(text)
	return Score{Value: pass(good), Reason: reason, Reads: []events.ScoreRead{readOf(ev)}}
}

type textScorer struct{ kind, text string }

func (s *textScorer) Name() string       { return s.kind + ":" + s.text }
func (s *textScorer) Version() string    { return builtinVersion }
func (s *textScorer) ConfigHash() string { return configHash(s.kind, s.text) }
func (s *textScorer) Score(_ context.Context, in ScoreInput) (Score, error) {
	want := s.text
	if s.kind == "exact" && want == "" {
		want = in.Ideal()
	}
	return answerScore(in, func(text string) (bool, string) {
		if s.kind == "exact" {
			if strings.TrimSpace(text) == strings.TrimSpace(want) {
				return true, "the answer is exactly the text"
			}
			return false, "the answer differs from the text"
		}
		if strings.Contains(text, want) {
			return true, "the answer contains the text"
		}
		return false, "the answer does not contain the text"
	}), nil
}

type regexScorer struct{ re *regexp.Regexp }

func (s *regexScorer) Name() string       { return "regex:" + s.re.String() }
func (s *regexScorer) Version() string    { return builtinVersion }
func (s *regexScorer) ConfigHash() string { return configHash("regex", s.re.String()) }
func (s *regexScorer) Score(_ context.Context, in ScoreInput) (Score, error) {
	return answerScore(in, func(text string) (bool, string) {
		if s.re.MatchString(text) {
			return true, "the answer matches"
		}
		return false, "the answer does not match"
	}), nil
}

type schemaScorer struct {
	file, canonical string
	schema          *jsonschema.Resolved
}

func newSchemaScorer(file string) (*schemaScorer, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, specErr("json_schema:%s: %v", file, err)
	}
	canon, err := events.CanonicalizeJSON(b)
	if err != nil {
		return nil, specErr("json_schema:%s: %v", file, err)
	}
	var sc jsonschema.Schema
	if err := json.Unmarshal(b, &sc); err != nil {
		return nil, specErr("json_schema:%s: not a JSON Schema: %v", file, err)
	}
	res, err := sc.Resolve(nil)
	if err != nil {
		return nil, specErr("json_schema:%s: %v", file, err)
	}
	return &schemaScorer{file: file, canonical: string(canon), schema: res}, nil
}

func (s *schemaScorer) Name() string       { return "json_schema:" + s.file }
func (s *schemaScorer) Version() string    { return builtinVersion }
func (s *schemaScorer) ConfigHash() string { return configHash("json_schema", s.canonical) }
func (s *schemaScorer) Score(_ context.Context, in ScoreInput) (Score, error) {
	return answerScore(in, func(text string) (bool, string) {
		var v any
		if err := json.Unmarshal([]byte(strings.TrimSpace(text)), &v); err != nil {
			return false, "the answer is not JSON"
		}
		if err := s.schema.Validate(v); err != nil {
			return false, "the answer does not match the schema: " + err.Error()
		}
		return true, "the answer matches the schema"
	}), nil
}

// eventsOf decodes the events of one type.
func eventsOf[T events.Payload](in ScoreInput, typ string) ([]events.Event, []T) {
	var evs []events.Event
	var ps []T
	for _, ev := range in.Events {
		if ev.Type != typ {
			continue
		}
		p, err := ev.Decode()
		if err != nil {
			continue
		}
		if t, ok := p.(T); ok {
			evs, ps = append(evs, ev), append(ps, t)
		}
	}
	return evs, ps
}

type toolCalledScorer struct{ tool string }

func (s *toolCalledScorer) Name() string       { return "tool_called:" + s.tool }
func (s *toolCalledScorer) Version() string    { return builtinVersion }
func (s *toolCalledScorer) ConfigHash() string { return configHash("tool_called", s.tool) }
func (s *toolCalledScorer) Score(_ context.Context, in ScoreInput) (Score, error) {
	evs, calls := eventsOf[*events.ToolCalled](in, events.TypeToolCalled)
	var reads []events.ScoreRead
	for i, c := range calls {
		if c.Tool == s.tool {
			return Score{Value: 1, Reason: "the run called " + s.tool, Reads: []events.ScoreRead{readOf(evs[i])}}, nil
		}
		reads = append(reads, readOf(evs[i]))
	}
	return Score{Value: 0, Reason: fmt.Sprintf("the run did not call %s (%d other tool calls)", s.tool, len(calls)), Reads: reads}, nil
}

type noToolErrorScorer struct{}

func (noToolErrorScorer) Name() string    { return "no_tool_error" }
func (noToolErrorScorer) Version() string { return builtinVersion }
func (noToolErrorScorer) Score(_ context.Context, in ScoreInput) (Score, error) {
	evs, rets := eventsOf[*events.ToolReturned](in, events.TypeToolReturned)
	var reads []events.ScoreRead
	for i, r := range rets {
		if r.IsError || r.ErrorKind != "" {
			return Score{Value: 0, Reason: fmt.Sprintf("tool %s failed (%s)", r.Tool, r.ErrorKind), Reads: []events.ScoreRead{readOf(evs[i])}}, nil
		}
		reads = append(reads, readOf(evs[i]))
	}
	return Score{Value: 1, Reason: fmt.Sprintf("%d tool calls, none failed", len(rets)), Reads: reads}, nil
}

type maxTokensScorer struct{ max int64 }

func (s *maxTokensScorer) Name() string    { return "max_tokens:" + strconv.FormatInt(s.max, 10) }
func (s *maxTokensScorer) Version() string { return builtinVersion }
func (s *maxTokensScorer) ConfigHash() string {
	return configHash("max_tokens", strconv.FormatInt(s.max, 10))
}
func (s *maxTokensScorer) Score(_ context.Context, in ScoreInput) (Score, error) {
	evs, calls := eventsOf[*events.ProviderCalled](in, events.TypeProviderCalled)
	var total int64
	reads := make([]events.ScoreRead, 0, len(evs))
	for i, c := range calls {
		total += c.Usage.TotalTokens
		reads = append(reads, readOf(evs[i]))
	}
	return Score{Value: pass(total <= s.max), Reason: fmt.Sprintf("%d tokens in %d model calls", total, len(calls)), Reads: reads}, nil
}

type maxLatencyScorer struct{ max time.Duration }

func (s *maxLatencyScorer) Name() string       { return "max_latency:" + s.max.String() }
func (s *maxLatencyScorer) Version() string    { return builtinVersion }
func (s *maxLatencyScorer) ConfigHash() string { return configHash("max_latency", s.max.String()) }
func (s *maxLatencyScorer) Score(_ context.Context, in ScoreInput) (Score, error) {
	started, _ := eventsOf[*events.RunStarted](in, events.TypeRunStarted)
	finished, _ := eventsOf[*events.RunFinished](in, events.TypeRunFinished)
	if len(started) == 0 || len(finished) == 0 {
		return Score{Value: 0, Reason: "the run has not finished"}, nil
	}
	a, b := started[0], finished[len(finished)-1]
	d := b.At.Sub(a.At)
	return Score{Value: pass(d <= s.max), Reason: "the run took " + d.Round(time.Millisecond).String(),
		Reads: []events.ScoreRead{readOf(a), readOf(b)}}, nil
}
