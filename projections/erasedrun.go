package projections

import (
	"database/sql"
	"errors"
	"fmt"

	"github.com/gorath/rath/events"
)

// An erasure drops the rows of its subject's runs (a rebuild cannot make
// them: their run.started no longer opens). A run erased while it was
// running goes on under the subject's new key, and its run.finished then
// finds no row: that is the erasure's doing, not an inconsistency, and
// the run stays out of the read models, as a rebuild leaves it.

// runRowErased reports whether run's row is missing because its subject
// was erased: the log holds its run.started, which no longer opens. A
// rebuild reads it from the store it replays (its events are not in the
// scratch database of a check); an append, through its transaction,
// where a run.started the read models lack can only be one whose row an
// erasure dropped.
func (a *applier) runRowErased(run string) (bool, error) {
	if a.src != nil {
		evs, err := a.src.ReadStreamUntil(a.ctx, run, 1, 1<<62, 1)
		if err != nil {
			return false, fmt.Errorf("projections: run %q: %w", run, err)
		}
		return len(evs) == 1 && evs[0].Type == events.TypeRunStarted && string(evs[0].Payload) == events.ErasedMarker, nil
	}
	var typ string
	err := a.tx.QueryRow(`SELECT type FROM events WHERE stream = ? AND version = 1`, run).Scan(&typ)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("projections: run %q: %w", run, err)
	}
	return typ == events.TypeRunStarted, nil
}
