package flow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/session"
)

// Candidate is a workflow a Selector may choose.
type Candidate struct {
	Name        string
	Description string
	Workflow    Workflow
}

// NoneChoice is the name a model gives to choose no candidate.
const NoneChoice = "none"

// selectTool is the function the model calls to choose.
const selectTool = "choose_next"

// DefaultSelectPrompt frames the choice.
const DefaultSelectPrompt = "You route work. Read the conversation and choose which step runs next by calling " + selectTool + ". Choose \"" + NoneChoice + "\" when the work is done."

// Selector asks a model which workflow runs next. Its model calls and its
// decisions are recorded on a side stream (events.DecisionStream), so the
// caller's session handle stays current.
type Selector struct {
	Provider *Provider
	// Prompt frames the choice; empty means DefaultSelectPrompt.
	Prompt string
	name   string
}

// NewSelector returns a Selector.
func NewSelector(p *Provider) *Selector { return &Selector{Provider: p} }

// Name returns the path segment.
func (sel *Selector) Name() string { return sel.name }

// SetName sets the path segment and returns sel.
func (sel *Selector) SetName(name string) *Selector { sel.name = name; return sel }

// Select returns the candidate's workflow the model chose, or Empty when
// it chose none. An invalid choice (an unknown name, no call) is retried
// once with the reason; a second invalid choice fails with ErrNoSelection.
func (sel *Selector) Select(ctx context.Context, s *session.Session, candidates ...Candidate) (Workflow, error) {
	if len(candidates) == 0 {
		return Empty, nil
	}
	names := make([]string, len(candidates))
	var list strings.Builder
	for i, c := range candidates {
		if c.Name == "" || c.Name == NoneChoice || slices.Contains(names[:i], c.Name) {
			return nil, fmt.Errorf("flow: selector candidate %d has an empty, reserved or repeated name %q", i, c.Name)
		}
		names[i] = c.Name
		fmt.Fprintf(&list, "- %s: %s\n", c.Name, c.Description)
	}
	seg := sel.name
	if seg == "" {
		seg = "selector"
	}
	path := "root." + seg
	if parent := Path(ctx); parent != "" {
		path = parent + "." + seg
	}
	schema, _ := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name":   map[string]any{"type": "string", "enum": append(slices.Clone(names), NoneChoice)},
			"reason": map[string]any{"type": "string"},
		},
		"required": []string{"name"},
	})
	prompt := sel.Prompt
	if prompt == "" {
		prompt = DefaultSelectPrompt
	}
	msgs := append([]model.Message{{Role: events.RoleSystem, Content: prompt + "\n\nCandidates:\n" + list.String()}}, s.Chunks()...)
	stream := events.DecisionStream(s.ID())
	rec := func(ctx context.Context, blobs [][]byte, ev events.Payload) error {
		_, err := s.Manager().Appender().AppendWrites(ctx, eventlog.Write{Stream: stream, Expected: eventlog.AnyVersion, Events: []events.Payload{ev}, Blobs: blobs})
		return err
	}
	spec := model.ToolSpec{Name: selectTool, Description: "Choose the next step, or \"none\" when done.", Parameters: schema}
	var problem string
	for attempt := 1; attempt <= 2; attempt++ {
		req := model.Request{Messages: msgs, Tools: []model.ToolSpec{spec}, ToolChoice: selectTool}
		if problem != "" {
			req.Messages = append(slices.Clone(msgs), model.Message{Role: events.RoleUser, Content: "Your last choice was invalid: " + problem + ". Call " + selectTool + " with one of: " + strings.Join(names, ", ") + ", " + NoneChoice + "."})
		}
		resp, err := sel.Provider.call(ctx, s.ID(), path, req, nil, rec, nil)
		if err != nil {
			return nil, fmt.Errorf("flow: selector %s: %w", path, err)
		}
		choice, reason, perr := parseChoice(resp, names)
		if perr != nil {
			problem = perr.Error()
			continue
		}
		decided := events.SelectorDecided{Session: s.ID(), Path: path, Candidates: names, Chosen: choice, Attempts: attempt, Reason: reason}
		if err := rec(ctx, nil, decided); err != nil {
			return nil, fmt.Errorf("flow: selector %s: record decision: %w", path, err)
		}
		if choice == "" {
			return Empty, nil
		}
		i := slices.Index(names, choice)
		return Named(choice, candidates[i].Workflow), nil
	}
	decided := events.SelectorDecided{Session: s.ID(), Path: path, Candidates: names, Attempts: 2, Reason: "invalid: " + problem}
	if err := rec(ctx, nil, decided); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: %s", ErrNoSelection, problem)
}

// parseChoice reads the model's choice: "" for none.
func parseChoice(resp model.Response, names []string) (choice, reason string, err error) {
	if len(resp.ToolCalls) == 0 {
		// Accept a bare name in text, which some models give instead.
		text := strings.Trim(strings.TrimSpace(resp.Content), "\"'.`")
		if text == NoneChoice {
			return "", "", nil
		}
		if slices.Contains(names, text) {
			return text, "", nil
		}
		return "", "", errors.New("no " + selectTool + " call")
	}
	tc := resp.ToolCalls[0]
	if tc.Name != selectTool {
		return "", "", fmt.Errorf("called %q instead of %s", tc.Name, selectTool)
	}
	var args struct {
		Name   string `json:"name"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal([]byte(tc.Arguments), &args); err != nil {
		return "", "", fmt.Errorf("arguments are not valid JSON (%v)", err)
	}
	if args.Name == NoneChoice {
		return "", args.Reason, nil
	}
	if !slices.Contains(names, args.Name) {
		return "", "", fmt.Errorf("%q is not a candidate", args.Name)
	}
	return args.Name, args.Reason, nil
}
