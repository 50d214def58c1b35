package approval

import (
	"context"
	"time"
)

// Clock tells the time deadlines are set and judged by.
type Clock func(context.Context) (time.Time, error)

type clockKey struct{}

// WithClock returns ctx whose approval deadlines are set and judged on
// clock. A fleet worker passes its lease clock (the database's on
// PostgreSQL), so a deadline one worker set is due at the same moment
// for the reaper of another whose machine's clock disagrees.
func WithClock(ctx context.Context, clock Clock) context.Context {
	return context.WithValue(ctx, clockKey{}, clock)
}

// Now is the time on ctx's clock (WithClock); without one, time.Now.
func Now(ctx context.Context) (time.Time, error) {
	if c, ok := ctx.Value(clockKey{}).(Clock); ok && c != nil {
		return c(ctx)
	}
	return time.Now(), nil
}
