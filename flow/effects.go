package flow

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	mrand "math/rand/v2"
	"strconv"
	"time"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/oracle"
)

// Workflows must not read the clock or draw random numbers directly: a
// replay would see other values and diverge. Now and Rand record the value
// in the log (effect.recorded, on a per-run, per-path stream) and a replay
// gets the recorded one back.

// Now returns the current time, recorded; in a replay, the recorded time.
func Now(ctx context.Context) (time.Time, error) {
	v, err := effect(ctx, "now", func() string { return time.Now().UTC().Format(time.RFC3339Nano) })
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("flow: recorded time %q: %w", v, err)
	}
	return t, nil
}

// Rand returns a random generator whose seed is recorded; in a replay it
// yields the same numbers.
func Rand(ctx context.Context) (*mrand.Rand, error) {
	v, err := effect(ctx, "rand", func() string {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			panic(fmt.Sprintf("flow: entropy: %v", err)) // crypto/rand does not fail on supported platforms
		}
		return strconv.FormatUint(binary.BigEndian.Uint64(b[:]), 10)
	})
	if err != nil {
		return nil, err
	}
	seed, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("flow: recorded seed %q: %w", v, err)
	}
	return mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), nil
}

// effect returns the recorded value of a side effect, or makes it with
// live and records it.
func effect(ctx context.Context, kind string, live func() string) (string, error) {
	path := Path(ctx)
	if path == "" {
		path = "root"
	}
	var value string
	answered := false
	if o := oracle.From(ctx); o != nil {
		ans, err := o.Effect(ctx, oracle.EffectCall{Path: path, Kind: kind})
		if err != nil {
			return "", err
		}
		if !ans.Live {
			value, answered = ans.Value, true
		}
	}
	if !answered {
		value = live()
	}
	rec, ok := recorderFrom(ctx)
	if !ok {
		return "", fmt.Errorf("flow: %s outside a workflow: run it through flow.Forward or rt.Start", kind)
	}
	runID := "none"
	if r := rec.Scope().Run; r.ID != "" {
		runID = r.ID
	}
	if _, err := rec.Append(ctx, events.EffectStream(runID, path), eventlog.AnyVersion, events.EffectRecorded{Path: path, Kind: kind, Value: value}); err != nil {
		return "", fmt.Errorf("flow: record %s: %w", kind, err)
	}
	return value, nil
}
