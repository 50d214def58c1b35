package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/signkey"
)

// ErrTampered is matched by a *TamperError.
var ErrTampered = errors.New("checkpoint: a checkpoint does not match the log")

// TamperError reports a stored checkpoint that the log or its own
// signatures contradict: the tree, the checkpoint or a cosignature was
// altered after it was signed.
type TamperError struct {
	Size   int64 // the checkpoint's size
	ID     int64 // its row id
	Reason string
}

func (e *TamperError) Error() string {
	return fmt.Sprintf("checkpoint: the checkpoint at size %d (id %d) %s", e.Size, e.ID, e.Reason)
}

// Is makes errors.Is(err, ErrTampered) true.
func (e *TamperError) Is(target error) bool { return target == ErrTampered }

// VerifyOptions configure Verify.
type VerifyOptions struct {
	// Keys, if set, are the note verifier keys trusted to sign the log's
	// checkpoints: a checkpoint signed by any other key is a failure.
	// Empty means each checkpoint is checked against the key recorded
	// with it, which proves the store consistent with itself only.
	Keys []string
}

// Report is what Verify found.
type Report struct {
	Checkpoints int      `json:"checkpoints"`
	Keys        []string `json:"keys,omitempty"` // names of the signing keys, in order of first use
	LatestSize  int64    `json:"latest_size,omitempty"`
	LatestRoot  string   `json:"latest_root,omitempty"`
	// Witnesses are the names of the witness keys that cosigned, and
	// WitnessedSize the largest size any of them cosigned.
	Witnesses     []string `json:"witnesses,omitempty"`
	WitnessedSize int64    `json:"witnessed_size,omitempty"`
	Cosignatures  int      `json:"cosignatures"`
	// Failure is the first checkpoint found wrong (nil: all good).
	Failure *TamperError `json:"failure,omitempty"`
}

// OK reports whether every checkpoint checked out.
func (r *Report) OK() bool { return r.Failure == nil }

// Attested reports whether at least one checkpoint was checked.
func (r *Report) Attested() bool { return r.Checkpoints > 0 }

// Summary says in one line what the checkpoints attest.
func (r *Report) Summary() string {
	switch {
	case r.Failure != nil:
		return "NOT attested: " + r.Failure.Error()
	case r.Checkpoints == 0:
		return "locally consistent, not attested"
	}
	w := "no witness"
	if len(r.Witnesses) > 0 {
		w = fmt.Sprintf("%s (up to size %d)", strings.Join(r.Witnesses, ", "), r.WitnessedSize)
	}
	return fmt.Sprintf("attested: %d checkpoints signed by %s, latest size %d, witnessed by %s", r.Checkpoints, strings.Join(r.Keys, ", "), r.LatestSize, w)
}

// Verify checks every stored checkpoint: its signature (by the key
// recorded with it, or by one of opts.Keys), its text against its row,
// its origin against the store's, its root against the root of the
// stored tree at its size, and every cosignature by the witness key
// recorded with it. A mismatch is the Report's Failure, not an error;
// errors are I/O. Verify the log itself (events.Store.Verify) first: this
// trusts the stored tree to be the tree of the stored events.
func Verify(ctx context.Context, store *events.Store, opts VerifyOptions) (*Report, error) {
	cps, err := List(ctx, store)
	if err != nil {
		return nil, err
	}
	rep := &Report{}
	if len(cps) == 0 {
		return rep, nil
	}
	origin, err := Origin(ctx, store)
	if err != nil {
		return nil, err
	}
	trusted, err := verifiers(opts.Keys)
	if err != nil {
		return nil, err
	}
	head, err := store.TreeHead(ctx)
	if err != nil {
		return nil, err
	}
	for _, cp := range cps {
		reason, err := checkOne(ctx, store, origin, head, trusted, cp)
		if err != nil {
			return nil, err
		}
		if reason != "" {
			rep.Failure = &TamperError{Size: cp.Size, ID: cp.ID, Reason: reason}
			return rep, nil
		}
		rep.Checkpoints++
		if !slices.Contains(rep.Keys, cp.KeyName) {
			rep.Keys = append(rep.Keys, cp.KeyName)
		}
		if cp.Size >= rep.LatestSize {
			rep.LatestSize, rep.LatestRoot = cp.Size, cp.Root.String()
		}
		for _, co := range cp.Cosignatures {
			rep.Cosignatures++
			if !slices.Contains(rep.Witnesses, co.Name()) {
				rep.Witnesses = append(rep.Witnesses, co.Name())
			}
			rep.WitnessedSize = max(rep.WitnessedSize, cp.Size)
		}
	}
	return rep, nil
}

// checkOne returns why cp is wrong, or "".
func checkOne(ctx context.Context, store *events.Store, origin string, head events.TreeHead, trusted note.Verifiers, cp *Checkpoint) (string, error) {
	v, _, err := signkey.ParseVerifierKey(cp.VerifierKey)
	if err != nil {
		return "records a verifier key that is not one: " + err.Error(), nil
	}
	if v.Name() != cp.KeyName {
		return fmt.Sprintf("records key name %q but a verifier key named %q", cp.KeyName, v.Name()), nil
	}
	known := note.VerifierList(v)
	if trusted != nil {
		known = trusted
	}
	n, err := note.Open(cp.Note, known)
	if err != nil {
		if trusted != nil {
			return fmt.Sprintf("is not signed by a trusted key (signed by %s): %v", cp.KeyName, err), nil
		}
		return "has a signature that does not verify: " + err.Error(), nil
	}
	gotOrigin, h, err := ParseBody(n.Text)
	if err != nil {
		return err.Error(), nil
	}
	switch {
	case gotOrigin != origin:
		return fmt.Sprintf("names origin %q, the store is %q", gotOrigin, origin), nil
	case h.Size != cp.Size || h.Root != cp.Root:
		return fmt.Sprintf("signed size %d root %s but its row says size %d root %s", h.Size, h.Root, cp.Size, cp.Root), nil
	case h.Size > head.Size:
		return fmt.Sprintf("is past the end of the log (%d events): the log was truncated", head.Size), nil
	}
	at, err := store.TreeHeadAt(ctx, h.Size)
	if err != nil {
		if errors.Is(err, events.ErrTree) {
			return "cannot be checked: " + err.Error(), nil
		}
		return "", err
	}
	if at.Root != h.Root {
		return fmt.Sprintf("signed root %s but the log's tree at that size has root %s: the log was rewritten", h.Root, at.Root), nil
	}
	for _, co := range cp.Cosignatures {
		wv, _, err := signkey.ParseVerifierKey(co.WitnessKey)
		if err != nil {
			return "has a cosignature whose witness key is not one: " + err.Error(), nil
		}
		if _, err := note.Open([]byte(n.Text+"\n"+co.Line), note.VerifierList(wv)); err != nil {
			return fmt.Sprintf("has a cosignature by %s that does not verify: %v", wv.Name(), err), nil
		}
	}
	return "", nil
}

// verifiers parses note verifier keys; nil for none.
func verifiers(keys []string) (note.Verifiers, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	vs := make([]note.Verifier, 0, len(keys))
	for _, k := range keys {
		v, _, err := signkey.ParseVerifierKey(k)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: trusted key: %w", err)
		}
		vs = append(vs, v)
	}
	return note.VerifierList(vs...), nil
}
