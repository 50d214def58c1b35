package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// blobReferrers are the event types whose payloads reference blobs.
var blobReferrers = map[string]struct{}{TypeProviderCalled: {}, TypeProviderFailed: {}, TypeToolReturned: {}}

// ErrVerify is matched by a *VerifyError.
var ErrVerify = errors.New("events: verification failed")

// VerifyError names the first event (or blob) that failed verification.
type VerifyError struct {
	Seq    int64  // 0 for a failure not tied to one event
	Blob   string // set when a blob failed
	Reason string
}

func (e *VerifyError) Error() string {
	switch {
	case e.Blob != "":
		return fmt.Sprintf("events: verification failed: blob %s: %s", e.Blob, e.Reason)
	case e.Seq > 0:
		return fmt.Sprintf("events: verification failed at seq %d: %s", e.Seq, e.Reason)
	}
	return "events: verification failed: " + e.Reason
}

// Is makes errors.Is(err, ErrVerify) true.
func (e *VerifyError) Is(target error) bool { return target == ErrVerify }

// VerifyOptions configure Verify.
type VerifyOptions struct {
	// Head, if set, is a head recorded elsewhere earlier: the log must still
	// contain that event with that hash. This catches truncation, which the
	// chain alone cannot.
	Head *Head
	// Progress, if set, is called after each page with the events checked.
	Progress func(checked int64)
}

// VerifyReport is the result of Verify.
type VerifyReport struct {
	Events  int64        `json:"events"`
	Blobs   int64        `json:"blobs"`
	Head    Head         `json:"head"`
	Failure *VerifyError `json:"failure,omitempty"`
}

// OK reports whether everything verified.
func (r *VerifyReport) OK() bool { return r.Failure == nil }

// Verify recomputes the hash chain from the first event, checks that seqs
// are contiguous, that every blob matches its address and every blob an
// event references (a payload stored as a blob, a model request, a tool
// output, file contents) exists, and, if opts.Head is given, that the log still holds that
// head. A verification failure is reported in the report (the first bad
// seq), not as an error; the error is for I/O failures.
func (s *Store) Verify(ctx context.Context, opts VerifyOptions) (*VerifyReport, error) {
	rep := &VerifyReport{}
	h := newChainHasher(s.opts.HMACKey)
	prevHash, prevSeq := "", int64(0)
	fail := func(seq int64, format string, args ...any) (*VerifyReport, error) {
		rep.Failure = &VerifyError{Seq: seq, Reason: fmt.Sprintf(format, args...)}
		return rep, nil
	}
	// Hashes of the stored blobs, to check that every blob an event
	// references (a request, a tool output, file contents) exists.
	have := map[string]bool{}
	hrows, err := s.rdb.QueryContext(ctx, `SELECT hash FROM blobs`)
	if err != nil {
		return nil, fmt.Errorf("events: verify blobs: %w", err)
	}
	for hrows.Next() {
		var h string
		if err := hrows.Scan(&h); err != nil {
			hrows.Close()
			return nil, fmt.Errorf("events: verify blobs: %w", err)
		}
		have[h] = true
	}
	hrows.Close()
	var headFound bool
	for {
		rs, err := s.rows(ctx, Query{}, prevSeq, scanPage)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if r.Seq != prevSeq+1 {
				return fail(prevSeq+1, "event missing: seq jumps from %d to %d", prevSeq, r.Seq)
			}
			want := h.eventHash(prevHash, r.Seq, r.Stream, r.Version, r.Type, r.TypeVersion, r.RunID.String, []byte(r.Payload), r.At)
			if want != r.Hash {
				reason := "hash mismatch: the row was altered or the chain was rewritten"
				if r.Seq == 1 {
					reason += " (or the HMAC key differs)"
				}
				return fail(r.Seq, "%s", reason)
			}
			if bytes.HasPrefix([]byte(r.Payload), blobPrefix) {
				var bp blobPointer
				if err := json.Unmarshal([]byte(r.Payload), &bp); err != nil {
					return fail(r.Seq, "bad blob reference: %v", err)
				}
				b, err := s.GetBlob(ctx, bp.Blob)
				if errors.Is(err, ErrBlobNotFound) {
					return fail(r.Seq, "payload blob %s is missing", bp.Blob)
				}
				if err != nil {
					return nil, err
				}
				if BlobHash(b) != bp.Blob || len(b) != bp.Size {
					return fail(r.Seq, "payload blob %s does not match its hash", bp.Blob)
				}
			}
			if _, refers := blobReferrers[r.Type]; refers {
				ev, err := s.toEvent(ctx, r)
				if err != nil {
					return fail(r.Seq, "payload unreadable: %v", err)
				}
				p, err := ev.Decode()
				if err != nil {
					return fail(r.Seq, "payload does not decode: %v", err)
				}
				if br, ok := p.(BlobReferrer); ok {
					for _, ref := range br.BlobRefs() {
						if !have[ref] {
							return fail(r.Seq, "referenced blob %s is missing", ref)
						}
					}
				}
			}
			if opts.Head != nil && r.Seq == opts.Head.Seq {
				if r.Hash != opts.Head.Hash {
					return fail(r.Seq, "hash %s differs from the recorded head %s", r.Hash, opts.Head.Hash)
				}
				headFound = true
			}
			prevHash, prevSeq = r.Hash, r.Seq
			rep.Events++
		}
		if opts.Progress != nil {
			opts.Progress(rep.Events)
		}
		if len(rs) < scanPage {
			break
		}
	}
	rep.Head = Head{Seq: prevSeq, Hash: prevHash}
	if opts.Head != nil && !headFound {
		return fail(opts.Head.Seq, "the log ends at seq %d, before the recorded head %d: it was truncated", prevSeq, opts.Head.Seq)
	}
	// Every blob must match its content address.
	rows, err := s.rdb.QueryContext(ctx, `SELECT hash, bytes FROM blobs ORDER BY hash`)
	if err != nil {
		return nil, fmt.Errorf("events: verify blobs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var hash string
		var b []byte
		if err := rows.Scan(&hash, &b); err != nil {
			return nil, fmt.Errorf("events: verify blobs: %w", err)
		}
		if BlobHash(b) != hash {
			rep.Failure = &VerifyError{Blob: hash, Reason: "content does not match its hash"}
			return rep, nil
		}
		rep.Blobs++
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("events: verify blobs: %w", err)
	}
	return rep, nil
}
