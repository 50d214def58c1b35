package approval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// ArgsHash is the hash a decision is bound to: the SHA-256 (hex) of the
// exact argument text that will run.
func ArgsHash(args string) string {
	sum := sha256.Sum256([]byte(args))
	return hex.EncodeToString(sum[:])
}

// RequestID derives a request's id from the parts that identify where it
// was asked (session, call id, path, question), so a replay or a resume
// of the run derives the same id.
func RequestID(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return "apr-" + hex.EncodeToString(h.Sum(nil))[:16]
}

// State is one request as its stream holds it.
type State struct {
	Request     *events.ApprovalRequested
	RequestedAt time.Time
	Decision    *events.ApprovalDecided // nil while pending
	DecidedAt   time.Time
}

// Pending reports whether nobody decided yet.
func (s State) Pending() bool { return s.Decision == nil }

// Expired reports whether the request is pending past its deadline.
func (s State) Expired(now time.Time) bool {
	return s.Pending() && s.Request.Deadline > 0 && now.UnixNano() >= s.Request.Deadline
}

// Load reads a request and its decision.
func Load(ctx context.Context, store *eventlog.Store, id string) (State, error) {
	evs, err := store.ReadStream(ctx, events.ApprovalStream(id), 1)
	if err != nil {
		return State{}, fmt.Errorf("approval: load %s: %w", id, err)
	}
	if len(evs) == 0 {
		return State{}, &UnknownError{ID: id}
	}
	var st State
	for _, ev := range evs {
		p, err := ev.Decode()
		if err != nil {
			return State{}, fmt.Errorf("approval: load %s: %w", id, err)
		}
		switch e := p.(type) {
		case *events.ApprovalRequested:
			st.Request, st.RequestedAt = e, ev.At
		case *events.ApprovalDecided:
			st.Decision, st.DecidedAt = e, ev.At
		}
	}
	if st.Request == nil {
		return State{}, &UnknownError{ID: id}
	}
	return st, nil
}

// Decision is what a person decides.
type Decision struct {
	// Decision is events.DecisionApproved, DecisionRejected (tool calls)
	// or DecisionAnswered (questions).
	Decision string
	// By is who decided; required.
	By string
	// Issuer and Via say who vouched for By and how it was established
	// (access.Identity's fields); empty when unknown.
	Issuer, Via string
	// Note is a remark, or a rejection's reason (which the model reads).
	Note string
	// EditedArguments, when set, approve these arguments instead of the
	// requested ones: what runs is exactly them.
	EditedArguments string
	// Answer is a question's answer, JSON matching its schema.
	Answer json.RawMessage
}

// Decide records d on request id, at now. Nothing is written when it
// fails: an unknown id (*UnknownError), a request decided already
// (*DecidedError, also when another decider won a race), one past its
// deadline (*ExpiredError), or a decision that does not fit the request
// (*InvalidError: an answer not matching the schema, approve on a
// question, edited arguments that are not a JSON object, no decider, a
// run that finished meanwhile).
func Decide(ctx context.Context, store *eventlog.Store, id string, d Decision, now time.Time) (*events.ApprovalDecided, error) {
	st, err := Load(ctx, store, id)
	if err != nil {
		return nil, err
	}
	if !st.Pending() {
		return nil, &DecidedError{ID: id, Decision: st.Decision.Decision, By: st.Decision.By}
	}
	if st.Expired(now) {
		return nil, &ExpiredError{ID: id, Deadline: time.Unix(0, st.Request.Deadline), Default: st.Request.Default}
	}
	if run := st.Request.Run; run != "" {
		// The run stream holds run.started, then run.finished.
		if v, err := store.StreamVersion(ctx, run); err != nil {
			return nil, fmt.Errorf("approval: %s: run %s: %w", id, run, err)
		} else if v >= 2 {
			return nil, &InvalidError{ID: id, Reason: "run " + run + " has finished (canceled?): nothing waits for this decision"}
		}
	}
	dec, err := build(st.Request, d)
	if err != nil {
		return nil, err
	}
	return dec, record(ctx, store, id, dec)
}

// build checks d against the request and returns the event to record.
func build(req *events.ApprovalRequested, d Decision) (*events.ApprovalDecided, error) {
	invalid := func(format string, args ...any) error {
		return &InvalidError{ID: req.ID, Reason: fmt.Sprintf(format, args...)}
	}
	if strings.TrimSpace(d.By) == "" {
		return nil, invalid("who decided is required")
	}
	dec := &events.ApprovalDecided{ID: req.ID, Run: req.Run, Decision: d.Decision, By: d.By, Issuer: d.Issuer, Via: d.Via, Note: d.Note, ArgsHash: req.ArgsHash}
	switch req.Kind {
	case events.ApprovalTool:
		switch d.Decision {
		case events.DecisionApproved:
		case events.DecisionRejected:
			if d.EditedArguments != "" {
				return nil, invalid("a rejection cannot edit the arguments")
			}
		default:
			return nil, invalid("a tool call is approved or rejected, not %q", d.Decision)
		}
		if len(d.Answer) > 0 {
			return nil, invalid("a tool call takes no answer")
		}
		if d.EditedArguments != "" {
			var obj map[string]any
			if err := json.Unmarshal([]byte(d.EditedArguments), &obj); err != nil {
				return nil, invalid("edited arguments are not a JSON object: %v", err)
			}
			dec.EditedArguments, dec.EditedHash = d.EditedArguments, ArgsHash(d.EditedArguments)
		}
	case events.ApprovalQuestion:
		if d.Decision != events.DecisionAnswered {
			return nil, invalid("a question is answered, not %q", d.Decision)
		}
		if d.EditedArguments != "" {
			return nil, invalid("a question has no arguments to edit")
		}
		answer, err := CheckAnswer(req.Schema, d.Answer)
		if err != nil {
			return nil, &InvalidError{ID: req.ID, Reason: err.Error()}
		}
		dec.Answer = answer
	}
	return dec, nil
}

// CheckAnswer validates a question's answer against the schema (canonical
// JSON; empty: any JSON value) and returns it as canonical JSON.
func CheckAnswer(schema string, answer json.RawMessage) (string, error) {
	if len(answer) == 0 {
		return "", errors.New("the answer is missing")
	}
	canon, err := events.CanonicalizeJSON(answer)
	if err != nil {
		return "", fmt.Errorf("the answer is not JSON: %v", err)
	}
	if schema == "" {
		return string(canon), nil
	}
	res, err := Resolve(schema)
	if err != nil {
		return "", err
	}
	var v any
	if err := json.Unmarshal(canon, &v); err != nil {
		return "", fmt.Errorf("the answer is not JSON: %v", err)
	}
	if err := res.Validate(v); err != nil {
		return "", fmt.Errorf("the answer does not match the schema: %v", err)
	}
	return string(canon), nil
}

// Resolve parses and resolves a JSON Schema.
func Resolve(schema string) (*jsonschema.Resolved, error) {
	var sc jsonschema.Schema
	if err := json.Unmarshal([]byte(schema), &sc); err != nil {
		return nil, fmt.Errorf("approval: schema: %w", err)
	}
	res, err := sc.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("approval: schema: %w", err)
	}
	return res, nil
}

// Expire records the default decision of a request past its deadline,
// by events.DecidedByDeadline, and returns it; nil when the request is
// decided already or not due (then nothing is written). A decider who
// wins the race first is kept: Expire returns that decision.
func Expire(ctx context.Context, store *eventlog.Store, id string, now time.Time) (*events.ApprovalDecided, error) {
	st, err := Load(ctx, store, id)
	if err != nil {
		return nil, err
	}
	if !st.Pending() {
		return st.Decision, nil
	}
	if !st.Expired(now) {
		return nil, nil
	}
	req := st.Request
	dec := &events.ApprovalDecided{ID: id, Run: req.Run, Decision: req.Default, By: events.DecidedByDeadline,
		Note: "the deadline passed undecided", ArgsHash: req.ArgsHash}
	if req.Default == events.DecisionAnswered {
		dec.Answer = req.DefaultAnswer
	}
	err = record(ctx, store, id, dec)
	var de *DecidedError
	if errors.As(err, &de) {
		st, err := Load(ctx, store, id)
		return st.Decision, err
	}
	return dec, err
}

// record appends the decision at version 2: a concurrent decider who
// landed first makes it a *DecidedError.
func record(ctx context.Context, store *eventlog.Store, id string, dec *events.ApprovalDecided) error {
	// The decision is not part of what the run did: appended in no run.
	_, err := store.Append(ctx, events.ApprovalStream(id), 1, *dec)
	if errors.Is(err, eventlog.ErrConflict) {
		st, lerr := Load(ctx, store, id)
		if lerr == nil && st.Decision != nil {
			return &DecidedError{ID: id, Decision: st.Decision.Decision, By: st.Decision.By}
		}
		return &DecidedError{ID: id}
	}
	if err != nil {
		return fmt.Errorf("approval: record the decision on %s: %w", id, err)
	}
	return nil
}
