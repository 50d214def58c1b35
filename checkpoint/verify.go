package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/gorath/rath/eventlog"
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
	// Witnesses, if set, are the note verifier keys of the witnesses the
	// caller trusts: unless one of them cosigned a checkpoint, the Report
	// is Unwitnessed. Empty pins none: cosignatures are checked against
	// the keys the store records, which anyone writing the store chooses.
	Witnesses []string
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
	// WitnessKeys are the witness keys that cosigned, by key id, in order
	// of first use. Pinned says whether VerifyOptions.Witnesses were
	// given, PinnedSize the largest size a pinned witness cosigned.
	WitnessKeys []WitnessKey `json:"witness_keys,omitempty"`
	Pinned      bool         `json:"pinned"`
	PinnedSize  int64        `json:"pinned_size,omitempty"`
	// Failure is the first checkpoint found wrong (nil: all good).
	Failure *TamperError `json:"failure,omitempty"`
	// Unwitnessed is set when witnesses were pinned and none of them
	// cosigned a checkpoint.
	Unwitnessed *WitnessError `json:"unwitnessed,omitempty"`
}

// WitnessKey is a witness key that cosigned some checkpoint.
type WitnessKey struct {
	Name string `json:"name"`
	// KeyID is the hex SHA-256 of its PKIX DER public key: the name is
	// the key holder's choice, the key id is not.
	KeyID  string `json:"key_id"`
	Pinned bool   `json:"pinned"`
	Size   int64  `json:"size"` // the largest size it cosigned
}

func (w WitnessKey) String() string {
	p := "pinned"
	if !w.Pinned {
		p = "NOT pinned"
	}
	return fmt.Sprintf("%s (key %s, up to size %d, %s)", w.Name, w.KeyID, w.Size, p)
}

// ErrUnwitnessed is matched by a *WitnessError.
var ErrUnwitnessed = errors.New("checkpoint: no pinned witness cosigned a checkpoint")

// WitnessError reports a log no pinned witness cosigned: its
// cosignatures, if any, are by keys the caller does not trust.
type WitnessError struct {
	Checkpoints int          `json:"checkpoints"`
	Seen        []WitnessKey `json:"seen"`
}

func (e *WitnessError) Error() string {
	if e.Checkpoints == 0 {
		return ErrUnwitnessed.Error() + ": the store has no checkpoint"
	}
	return fmt.Sprintf("%s of %d; cosigned by: %s", ErrUnwitnessed.Error(), e.Checkpoints, listKeys(e.Seen, "none"))
}

// listKeys lists ws for a message, or says none.
func listKeys(ws []WitnessKey, none string) string {
	if len(ws) == 0 {
		return none
	}
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = w.String()
	}
	return strings.Join(parts, ", ")
}

// Is makes errors.Is(err, ErrUnwitnessed) true.
func (e *WitnessError) Is(target error) bool { return target == ErrUnwitnessed }

// OK reports whether every checkpoint checked out and, with pinned
// witnesses, one of them cosigned.
func (r *Report) OK() bool { return r.Failure == nil && r.Unwitnessed == nil }

// Attested reports whether at least one checkpoint was checked.
func (r *Report) Attested() bool { return r.Checkpoints > 0 }

// Summary says in one line what the checkpoints attest.
func (r *Report) Summary() string {
	switch {
	case r.Failure != nil:
		return "NOT attested: " + r.Failure.Error()
	case r.Unwitnessed != nil:
		return "NOT witnessed: " + r.Unwitnessed.Error()
	case r.Checkpoints == 0:
		return "locally consistent, not attested"
	}
	w := listKeys(r.WitnessKeys, "no witness")
	pins := "no witness pinned (--witness-key): the witness keys are the store's own word"
	if r.Pinned {
		pins = fmt.Sprintf("pinned witnesses cosigned up to size %d of %d", r.PinnedSize, r.LatestSize)
	}
	n := fmt.Sprintf("%d checkpoints", r.Checkpoints)
	if r.Checkpoints == 1 {
		n = "1 checkpoint"
	}
	return fmt.Sprintf("attested: %s signed by %s, latest size %d, witnessed by %s; %s", n, strings.Join(r.Keys, ", "), r.LatestSize, w, pins)
}

// Verify checks every stored checkpoint: its signature (by the key
// recorded with it, or by one of opts.Keys), its text against its row,
// its origin against the store's, its root against the root of the
// stored tree at its size, and every cosignature by the witness key
// recorded with it. A mismatch is the Report's Failure, not an error;
// errors are I/O. Verify the log itself (eventlog.Store.Verify) first: this
// trusts the stored tree to be the tree of the stored events.
func Verify(ctx context.Context, store *eventlog.Store, opts VerifyOptions) (*Report, error) {
	cps, err := List(ctx, store)
	if err != nil {
		return nil, err
	}
	rep := &Report{Pinned: len(opts.Witnesses) > 0}
	pinned, err := keyIDs(opts.Witnesses)
	if err != nil {
		return nil, err
	}
	if len(cps) == 0 {
		if rep.Pinned {
			rep.Unwitnessed = &WitnessError{}
		}
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
			rep.addWitness(co, cp.Size, pinned)
		}
	}
	if rep.Pinned && rep.PinnedSize == 0 {
		rep.Unwitnessed = &WitnessError{Checkpoints: rep.Checkpoints, Seen: rep.WitnessKeys}
	}
	return rep, nil
}

// addWitness counts co, which checkOne verified, under its key id.
func (r *Report) addWitness(co Cosignature, size int64, pinned map[string]bool) {
	_, pub, _ := signkey.ParseVerifierKey(co.WitnessKey) // checkOne parsed it
	id := signkey.PublicKeyID(pub)
	if pinned[id] {
		r.PinnedSize = max(r.PinnedSize, size)
	}
	for i := range r.WitnessKeys {
		if r.WitnessKeys[i].KeyID == id {
			r.WitnessKeys[i].Size = max(r.WitnessKeys[i].Size, size)
			return
		}
	}
	r.WitnessKeys = append(r.WitnessKeys, WitnessKey{Name: co.Name(), KeyID: id, Pinned: pinned[id], Size: size})
}

// keyIDs parses note verifier keys into a set of their key ids.
func keyIDs(keys []string) (map[string]bool, error) {
	ids := make(map[string]bool, len(keys))
	for _, k := range keys {
		_, pub, err := signkey.ParseVerifierKey(k)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: pinned witness key: %w", err)
		}
		ids[signkey.PublicKeyID(pub)] = true
	}
	return ids, nil
}

// checkOne returns why cp is wrong, or "".
func checkOne(ctx context.Context, store *eventlog.Store, origin string, head eventlog.TreeHead, trusted note.Verifiers, cp *Checkpoint) (string, error) {
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
		if errors.Is(err, eventlog.ErrTree) {
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
