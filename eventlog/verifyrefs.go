package eventlog

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/keyring"
)

// Verify's checks of what an event reaches beyond its row: its blobs, and
// those of the request a provider call names (verify.go walks the rows).

// checkRefs checks the blobs an event reaches. It reports done when it
// recorded a failure in the report.
func (v *verifier) checkRefs(ctx context.Context, r row) (done bool, err error) {
	payload := []byte(r.Payload)
	if bytes.HasPrefix(payload, blobPrefix) {
		var bp blobPointer
		if err := json.Unmarshal(payload, &bp); err != nil {
			v.fail(r.Seq, "", "bad blob reference: %v", err)
			return true, nil
		}
		b, ok, err := v.blob(ctx, bp.Blob)
		if err != nil {
			return false, err
		}
		if !ok {
			v.fail(r.Seq, bp.Blob, "payload blob %s is missing", bp.Blob)
			return true, nil
		}
		if BlobHash(b) != bp.Blob || len(b) != bp.Size {
			v.fail(r.Seq, bp.Blob, "payload blob %s does not match its hash", bp.Blob)
			return true, nil
		}
		payload = b
	}
	if keyring.IsSealed(payload) {
		v.rep.Sealed++
		if _, refers := blobReferrers[r.Type]; !refers {
			return false, nil
		}
		pt, fail, err := v.unsealPayload(ctx, r, payload)
		if err != nil || fail != "" {
			if fail != "" {
				v.fail(r.Seq, "", "%s", fail)
			}
			return fail != "", err
		}
		if pt == nil {
			return false, nil
		}
		payload = pt
	} else if _, refers := blobReferrers[r.Type]; !refers {
		return false, nil
	}
	p, err := events.Decode(r.Type, r.TypeVersion, payload)
	if err != nil {
		v.fail(r.Seq, "", "payload does not decode: %v", err)
		return true, nil
	}
	if br, ok := p.(events.BlobReferrer); ok {
		for _, ref := range br.BlobRefs() {
			if !v.has(ctx, ref) {
				v.fail(r.Seq, ref, "referenced blob %s is missing", ref)
				return true, nil
			}
		}
	}
	var req string
	switch e := p.(type) {
	case *events.ProviderCalled:
		req = e.RequestRef
	case *events.ProviderFailed:
		req = e.RequestRef
	}
	if req == "" {
		return false, nil
	}
	return v.followRequest(ctx, r.Seq, req)
}

// The stored shapes of a model request (written by package flow, see
// flow/request.go): a record naming the last message segment, and
// segments each naming the one before.
type (
	requestHead struct {
		MessagesRef string `json:"messages_ref"`
	}
	messageSegment struct {
		Prev string          `json:"prev"`
		Add  json.RawMessage `json:"add"`
	}
)

// followRequest checks every message segment reachable from a request
// record: each must exist and match its hash. A request blob that is not
// a record with messages_ref (an older or foreign shape) has no chain.
func (v *verifier) followRequest(ctx context.Context, seq int64, ref string) (bool, error) {
	if v.followed[ref] {
		return false, nil
	}
	b, ok, fail, err := v.openAddress(ctx, ref)
	if err != nil || !ok {
		return false, err // existence was checked with the event's refs
	}
	if fail != "" {
		v.fail(seq, ref, "request blob %s: %s", ref, fail)
		return true, nil
	}
	if b == nil {
		return false, nil
	}
	v.followed[ref] = true
	var rec requestHead
	if json.Unmarshal(b, &rec) != nil || rec.MessagesRef == "" {
		return false, nil
	}
	for next, depth := rec.MessagesRef, 0; next != "" && !v.followed[next]; depth++ {
		seg, ok, fail, err := v.openAddress(ctx, next)
		if err != nil {
			return false, err
		}
		what := "message segment"
		if depth > 0 {
			what = "earlier message segment"
		}
		if !ok {
			v.fail(seq, next, "%s %s of request %s is missing", what, next, ref)
			return true, nil
		}
		if fail != "" {
			v.fail(seq, next, "%s %s of request %s: %s", what, next, ref, fail)
			return true, nil
		}
		if seg == nil {
			return false, nil
		}
		var m messageSegment
		if err := json.Unmarshal(seg, &m); err != nil || m.Add == nil {
			v.fail(seq, next, "%s %s of request %s is not a message segment", what, next, ref)
			return true, nil
		}
		v.followed[next] = true
		next = m.Prev
	}
	return false, nil
}

// has reports whether a blob is stored, looking it up in the snapshot when
// the list read at the start does not have it.
func (v *verifier) has(ctx context.Context, hash string) bool {
	if v.have[hash] {
		return true
	}
	var one int
	if v.tx.QueryRowContext(ctx, v.s.rebind(anyCopyOfAddress), addressBounds(hash)...).Scan(&one) == nil {
		v.have[hash] = true
		return true
	}
	return false
}

// blob reads a blob in the snapshot; ok is false when it is not stored.
func (v *verifier) blob(ctx context.Context, hash string) (b []byte, ok bool, err error) {
	err = v.tx.QueryRowContext(ctx, v.s.rebind(`SELECT bytes FROM blobs WHERE hash = ?`), hash).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("eventlog: verify blob %s: %w", hash, err)
	}
	return b, true, nil
}

// openAddress reads the blob at addr in the snapshot, every copy of it:
// ok is false when none is stored. b is the plaintext of a copy in clear
// that matches the address or of the first sealed copy that opens, nil
// when none could be opened (no key, or erased: counted in Unopened);
// fail says why a copy is bad.
func (v *verifier) openAddress(ctx context.Context, addr string) (b []byte, ok bool, fail string, err error) {
	copies, err := v.s.blobCopies(ctx, v.tx, addr)
	if err != nil || len(copies) == 0 {
		return nil, false, "", err
	}
	for _, c := range copies {
		if c.key == addr && BlobHash(c.bytes) == addr {
			return c.bytes, true, "", nil
		}
		pt, fail, err := v.unsealBlob(ctx, addr, c.bytes)
		if err != nil || fail != "" || pt != nil {
			return pt, true, fail, err
		}
	}
	return nil, true, "", nil
}
