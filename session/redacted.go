package session

import (
	"bytes"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/secret"
)

// keepRedacted replaces the chunks of add whose stored events the store
// redacted (see eventlog.Options.Redactor) with the chunks as stored, so the
// handle, and the next model request built from it, hold no more than the
// log does, and a replay of the log rebuilds the same requests.
func keepRedacted(add []entry, stored []events.Event) {
	for i := range add {
		if i >= len(stored) || !bytes.Contains(stored[i].Payload, []byte(secret.MarkerPrefix)) {
			continue
		}
		p, err := stored[i].Decode()
		if err != nil {
			continue
		}
		if ca, ok := p.(*events.ChunkAppended); ok {
			add[i].chunk = ca.Chunk
		}
	}
}
