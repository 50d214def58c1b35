package flow

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/internal/oracle"
)

// recorder writes a provider event (with its blobs) where the call's
// evidence belongs: the session's stream for agents, a side stream for
// selectors.
type recorder func(ctx context.Context, blobs [][]byte, ev events.Payload) error

// call makes one model call with retries, recording every attempt, and
// enforcing the budget. onDelta, if set and the client streams, receives
// deltas; after a failed attempt the next attempt streams from the start.
func (p *Provider) call(ctx context.Context, session, agent string, req model.Request, onDelta func(model.Delta), rec recorder, log *requestLog) (model.Response, error) {
	if p == nil || p.state == nil {
		return model.Response{}, fmt.Errorf("%w: the agent has no resolved provider (use ResolveProvider, or rath.NewProvider)", ErrProvider)
	}
	req.Agent = agent
	if req.Model == "" {
		req.Model = p.Model
	}
	req.Sampling = model.Sampling{Temperature: p.Temperature, TopP: p.TopP, MaxTokens: p.MaxTokens, Seed: p.Seed}
	if log == nil {
		log = &requestLog{}
	}
	enc, err := log.encode(req)
	if err != nil {
		return model.Response{}, err
	}
	// The request's blobs go with the first event recorded for it.
	reqBlobs := enc.blobs
	blobsOnce := func(extra ...[]byte) [][]byte {
		b := append(reqBlobs, extra...)
		reqBlobs = nil
		return b
	}
	digest, reqRef := enc.digest, enc.ref
	retry := p.Retry.withDefaults()
	backoff := retry.InitialBackoff
	for attempt := 1; ; attempt++ {
		if err := p.checkBudget(); err != nil {
			var be *BudgetError
			errors.As(err, &be)
			rerr := rec(ctx, blobsOnce(), events.ProviderFailed{Session: session, Agent: agent, Provider: p.label(), Model: req.Model,
				ErrorKind: "budget", Error: err.Error(), Attempt: attempt, RequestRef: reqRef, Digest: digest})
			return model.Response{}, errors.Join(err, rerr)
		}
		start := time.Now()
		var resp model.Response
		var err error
		replayed, replayLatency, recordRetries := false, int64(0), false
		if o := oracle.From(ctx); o != nil {
			ans, oerr := o.Model(ctx, oracle.ModelCall{Session: session, Agent: agent, Digest: digest, Attempt: attempt, Request: req})
			if oerr != nil {
				return model.Response{}, oerr
			}
			if !ans.Live {
				if r, ok := p.state.client.(model.Replayer); ok {
					r.Replayed(req, ans.Response)
				}
				replayed, replayLatency, recordRetries = true, ans.Latency.Milliseconds(), ans.Retry
				resp, err = ans.Response, ans.Err
				if onDelta != nil && err == nil && resp.Content != "" {
					onDelta(model.Delta{Content: resp.Content})
				}
			}
		}
		if !replayed {
			resp, err = p.attempt(ctx, req, onDelta)
		}
		latency := time.Since(start).Milliseconds()
		if replayed {
			latency = replayLatency
		}
		if err == nil {
			p.spend(resp.Usage)
			respJSON, err := events.Canonical(resp)
			if err != nil {
				return model.Response{}, err
			}
			ev := events.ProviderCalled{Session: session, Agent: agent, Provider: p.label(), Model: req.Model,
				RequestRef: reqRef, ResponseRef: eventlog.BlobHash(respJSON), Digest: digest, Usage: resp.Usage,
				LatencyMS: latency, Attempt: attempt, Streamed: onDelta != nil}
			if err := rec(ctx, blobsOnce(respJSON), ev); err != nil {
				return model.Response{}, fmt.Errorf("flow: record provider call: %w", err)
			}
			return resp, nil
		}
		kind := model.KindOf(err)
		if kind == "" {
			kind = model.KindConnection
			if ctx.Err() != nil {
				kind = model.KindCanceled
			}
		}
		willRetry := kind.Retryable() && attempt < retry.MaxAttempts && ctx.Err() == nil
		if rerr := rec(ctx, blobsOnce(), events.ProviderFailed{Session: session, Agent: agent, Provider: p.label(), Model: req.Model,
			ErrorKind: string(kind), Error: err.Error(), Attempt: attempt, WillRetry: willRetry, LatencyMS: latency, RequestRef: reqRef, Digest: digest}); rerr != nil && ctx.Err() == nil {
			return model.Response{}, errors.Join(err, fmt.Errorf("flow: record provider failure: %w", rerr))
		}
		if !willRetry && !recordRetries {
			return model.Response{}, err
		}
		wait := jittered(backoff)
		var me *model.Error
		if errors.As(err, &me) && me.RetryAfter > 0 {
			wait = me.RetryAfter
		}
		if wait > retry.MaxBackoff {
			wait = retry.MaxBackoff
		}
		if replayed {
			continue // a replay does not wait: the outcome is already known
		}
		if !p.state.sleep(wait, ctx.Done()) {
			return model.Response{}, ctx.Err()
		}
		backoff = min(backoff*2, retry.MaxBackoff)
	}
}

func (p *Provider) attempt(ctx context.Context, req model.Request, onDelta func(model.Delta)) (model.Response, error) {
	if onDelta != nil {
		if st, ok := p.state.client.(model.Streamer); ok {
			return st.Stream(ctx, req, onDelta)
		}
	}
	return p.state.client.Complete(ctx, req)
}

// jittered returns d scaled by a random factor in [0.5, 1.5), so clients
// that failed together do not retry together. The wait is not recorded.
func jittered(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.5 + rand.Float64()))
}

func (p *Provider) checkBudget() error {
	b := p.Budget
	st := p.state
	st.mu.Lock()
	defer st.mu.Unlock()
	if b.MaxCalls > 0 && st.calls >= b.MaxCalls {
		return &BudgetError{Provider: p.label(), Limit: "calls", Max: b.MaxCalls, Used: st.calls}
	}
	if b.MaxTokens > 0 && st.tokens >= b.MaxTokens {
		return &BudgetError{Provider: p.label(), Limit: "tokens", Max: b.MaxTokens, Used: st.tokens}
	}
	return nil
}

func (p *Provider) spend(u events.Usage) {
	p.state.mu.Lock()
	defer p.state.mu.Unlock()
	p.state.calls++
	p.state.tokens += u.TotalTokens
}
