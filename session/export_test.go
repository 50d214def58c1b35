package session

import "context"

// LoadAtByFolding is LoadAt without snapshots: it folds the session's
// stream from its first event, the definition the snapshots must match.
func LoadAtByFolding(ctx context.Context, m *Manager, id string, seq int64) (*Session, error) {
	return m.loadAt(ctx, id, seq, false)
}
