package projections

import (
	"fmt"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// tokenCreated lists an API token by the hash of its secret.
func tokenCreated(tx *eventlog.Tx, ev *events.Event, e *events.TokenCreated) error {
	if err := tx.ExecPipelined(`INSERT INTO api_tokens (id, hash, tenant, role, expires_at, created_by, created_seq, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, e.ID, e.Hash, e.Tenant, e.Role, e.ExpiresAt, e.By, ev.Seq, ev.At.UnixNano()); err != nil {
		return fmt.Errorf("projections: token %q: %w", e.ID, err)
	}
	return nil
}

// tokenRevoked marks a token revoked; the token's stream holds its
// creation at version 1, so a revoke of an unknown token is inconsistent.
func tokenRevoked(tx *eventlog.Tx, ev *events.Event, e *events.TokenRevoked) error {
	res, err := tx.Exec(`UPDATE api_tokens SET revoked_by = ?, revoked_seq = ?, revoked_at = ? WHERE id = ? AND revoked_seq IS NULL`,
		e.By, ev.Seq, ev.At.UnixNano(), e.ID)
	if err != nil {
		return fmt.Errorf("projections: revoke token %q: %w", e.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return inconsistent("access.token_revoked for %q, which is not an active token", e.ID)
	}
	return nil
}

// accessViewed lists one read of run content.
func accessViewed(tx *eventlog.Tx, ev *events.Event, e *events.AccessViewed) error {
	if err := tx.ExecPipelined(`INSERT INTO access_records (seq, who, issuer, tenant, run, from_seq, to_seq, namespace, what, route, at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, ev.Seq, e.Who, e.Issuer, e.Tenant, e.Run, e.FromSeq, e.ToSeq, e.Namespace, e.What, e.Route, e.At); err != nil {
		return fmt.Errorf("projections: access record: %w", err)
	}
	return nil
}
