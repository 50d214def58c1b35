package rath

import (
	"context"
	"fmt"
	"time"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// ErasureInfo is one erasure as the log records it: the evidence.erased
// event at Seq, written at At.
type ErasureInfo struct {
	Seq       int64     `json:"seq"`
	At        time.Time `json:"at"`
	Subject   string    `json:"subject"`
	By        string    `json:"by"`
	Reason    string    `json:"reason"`
	KeyIDHash string    `json:"key_id_hash"`
}

// String formats the erasure as verify lists it.
func (e ErasureInfo) String() string {
	return fmt.Sprintf("%s: erased at seq %d by %s: %s", e.Subject, e.Seq, e.By, e.Reason)
}

// Erasures lists the erasures recorded in the log, in seq order. A record
// that does not decode is an error: verify has proved the log, so it is
// one this build does not know.
func (rt *Runtime) Erasures(ctx context.Context) ([]ErasureInfo, error) {
	var out []ErasureInfo
	for ev, err := range rt.store.Scan(ctx, eventlog.Query{Stream: events.StreamEvidence, Types: []string{events.TypeEvidenceErased}}) {
		if err != nil {
			return nil, fmt.Errorf("rath: list erasures: %w", err)
		}
		p, err := ev.Decode()
		if err != nil {
			return nil, fmt.Errorf("rath: list erasures: seq %d: %w", ev.Seq, err)
		}
		rec := p.(*events.EvidenceErased)
		out = append(out, ErasureInfo{Seq: ev.Seq, At: ev.At, Subject: rec.Subject, By: rec.By, Reason: rec.Reason, KeyIDHash: rec.KeyIDHash})
	}
	return out, nil
}
