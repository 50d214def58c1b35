package projections

import (
	"context"
	"fmt"
	"strings"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// Content columns: the columns that hold text derived from an event's
// content (runs.params and runs.error, approvals.question and
// approvals.reason). With a key-encryption key the projector stores them
// sealed under the key of the event they come from
// (eventlog.Tx.SealText), bound to their table, column and row; a Reader
// with an opener opens them, and once the subject is erased they read as
// ErasedText. Every other column (ids, statuses, seqs, times, counts,
// tenants, tool and model names) stays clear: the console filters and
// sorts by them, and they are not anyone's content.

// ErasedText is what a content column reads as once the key of its
// subject was erased.
const ErasedText = "[erased]"

// The content columns, as their bindings name them.
const (
	colRunParams        = "runs.params"
	colRunError         = "runs.error"
	colApprovalQuestion = "approvals.question"
	colApprovalReason   = "approvals.reason"
)

// binding is a content column's binding: its table and column, and the
// row's key.
func binding(col, key string) string { return col + "\x00" + key }

// sealText seals a content column's value for the row key, from ev:
// under the key the append sealed ev with, or in a rebuild the key the
// log's row of ev is sealed under, which the read of ev named.
func (a *applier) sealText(ev *events.Event, col, key, text string) (string, error) {
	if text == "" {
		return "", nil
	}
	dk, ok := a.tx.SealingKey(ev)
	if !ok && a.src != nil {
		var err error
		if dk, err = a.src.SealedKey(a.ctx, ev.SealedUnder); err != nil {
			return "", fmt.Errorf("projections: seal %s of %q: %w", col, key, err)
		}
	}
	return eventlog.SealText(dk, binding(col, key), text), nil
}

// openText returns a content column's value in clear: as stored if it is
// not sealed, ErasedText once its subject was erased.
func (r *Reader) openText(ctx context.Context, col, key, stored string) (string, error) {
	if r.opener == nil {
		if strings.HasPrefix(stored, events.SealedPrefix) {
			return "", fmt.Errorf("projections: %s of %q is sealed and the reader opens nothing (Reader.WithOpener)", col, key)
		}
		return stored, nil
	}
	// The opener returns a value in clear as it is.
	text, erased, err := r.opener.OpenText(ctx, binding(col, key), stored)
	if err != nil {
		return "", fmt.Errorf("projections: %s of %q: %w", col, key, err)
	}
	if erased {
		return ErasedText, nil
	}
	return text, nil
}

// OpenRuns opens the content columns of rows read from the runs table
// (by a query of the caller's own).
func (r *Reader) OpenRuns(ctx context.Context, rows []RunRow) error {
	for i := range rows {
		var err error
		if rows[i].Error, err = r.openText(ctx, colRunError, rows[i].ID, rows[i].Error); err != nil {
			return err
		}
	}
	return nil
}

// openApprovals opens the content columns of approvals rows.
func (r *Reader) openApprovals(ctx context.Context, rows []ApprovalRow) error {
	for i := range rows {
		a := &rows[i]
		var err error
		if a.Question, err = r.openText(ctx, colApprovalQuestion, a.ID, a.Question); err != nil {
			return err
		}
		if a.Reason, err = r.openText(ctx, colApprovalReason, a.ID, a.Reason); err != nil {
			return err
		}
	}
	return nil
}
