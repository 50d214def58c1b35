package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/signkey"
)

// ErrRefused is matched by a *ForkError and a *RollbackError: the witness
// refused to cosign because the log's history changed.
var ErrRefused = errors.New("checkpoint: the witness refused the log")

// ForkError reports a checkpoint whose tree does not extend the one the
// witness cosigned last: the log's history was rewritten.
type ForkError struct {
	Cosigned eventlog.TreeHead // the witness's last cosigned head
	Offered  eventlog.TreeHead // the new checkpoint's head
	Reason   string
}

func (e *ForkError) Error() string {
	return fmt.Sprintf("checkpoint: fork: the checkpoint at size %d (root %s) does not extend the one this witness cosigned at size %d (root %s): %s",
		e.Offered.Size, e.Offered.Root, e.Cosigned.Size, e.Cosigned.Root, e.Reason)
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *ForkError) Is(target error) bool { return target == ErrRefused }

// RollbackError reports a log whose newest checkpoint, or whose tree, is
// older than the checkpoint the witness cosigned last: the log was
// rolled back or replaced.
type RollbackError struct {
	Cosigned eventlog.TreeHead
	Latest   eventlog.TreeHead // the log's newest checkpoint or tree head (Size 0: none)
}

func (e *RollbackError) Error() string {
	return fmt.Sprintf("checkpoint: rollback: the log is back at size %d (root %s), older than the checkpoint this witness cosigned at size %d (root %s)",
		e.Latest.Size, e.Latest.Root, e.Cosigned.Size, e.Cosigned.Root)
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *RollbackError) Is(target error) bool { return target == ErrRefused }

// State is what a witness remembers of a log, in its own file.
type State struct {
	Origin string `json:"origin"`
	// LogKey is the verifier key of the log it trusts.
	LogKey string            `json:"log_key"`
	Head   eventlog.TreeHead `json:"head"`
	// Note is the last checkpoint it cosigned, as the log signed it.
	Note string `json:"note"`
}

// Witness cosigns a log's checkpoints. The zero value is not usable: set
// Key, LogKey and StatePath.
type Witness struct {
	// Key is the witness's own signing key.
	Key *signkey.Key
	// LogKey is the note verifier key of the log's signer: only
	// checkpoints it signed are considered.
	LogKey string
	// StatePath is the witness's state file, outside the store. A
	// missing file is a witness that has seen nothing of the log: it
	// trusts the first checkpoint it sees (trust on first use).
	StatePath string
}

// StepResult is what one Step did.
type StepResult struct {
	Cosigned []eventlog.TreeHead // the checkpoints cosigned, in order
	Head     eventlog.TreeHead   // the witness's head afterwards
}

// Step checks every checkpoint the log key signed that is not older than
// the witness's state and cosigns each one that extends it, moving the
// state forward. It stops at the first one it refuses, with a *ForkError
// or *RollbackError; the state is left at the last good checkpoint.
func (w *Witness) Step(ctx context.Context, store *eventlog.Store) (StepResult, error) {
	var res StepResult
	logV, _, err := signkey.ParseVerifierKey(w.LogKey)
	if err != nil {
		return res, fmt.Errorf("checkpoint: witness: log key: %w", err)
	}
	st, err := LoadState(w.StatePath)
	if err != nil {
		return res, err
	}
	if st.LogKey != "" && st.LogKey != strings.TrimSpace(w.LogKey) {
		return res, fmt.Errorf("checkpoint: witness: the state file %s is for log key %s, not %s", w.StatePath, st.LogKey, w.LogKey)
	}
	res.Head = st.Head
	// The checkpoint cosigned last is still stored (the table is
	// append-only), so only those at or past its size are read.
	cps, err := query(ctx, store, selectCheckpoints+` WHERE size >= ? ORDER BY size, id`, st.Head.Size)
	if err != nil {
		return res, err
	}
	type offered struct {
		cp   *Checkpoint
		text string
		head eventlog.TreeHead
	}
	var todo []offered
	var latest eventlog.TreeHead
	for _, cp := range cps {
		n, err := note.Open(cp.Note, note.VerifierList(logV))
		if err != nil {
			continue // not signed by the log key: not the witness's business
		}
		origin, head, err := ParseBody(n.Text)
		if err != nil {
			continue
		}
		if st.Origin != "" && origin != st.Origin {
			return res, &ForkError{Cosigned: st.Head, Offered: head, Reason: fmt.Sprintf("its origin is %q, the witness's log is %q", origin, st.Origin)}
		}
		if head.Size > latest.Size {
			latest = head
		}
		if head.Size >= st.Head.Size {
			todo = append(todo, offered{cp, n.Text, head})
		}
	}
	if st.Head.Size > 0 && latest.Size < st.Head.Size {
		return res, &RollbackError{Cosigned: st.Head, Latest: w.latestSigned(ctx, store, logV)}
	}
	// The checkpoint rows may survive a truncated log: the tree itself
	// must still reach what was cosigned.
	if head, err := store.TreeHead(ctx); err != nil {
		return res, fmt.Errorf("checkpoint: witness: %w", err)
	} else if head.Size < st.Head.Size {
		return res, &RollbackError{Cosigned: st.Head, Latest: head}
	}
	for _, o := range todo {
		if err := w.checkExtends(ctx, store, st.Head, o.head); err != nil {
			return res, err
		}
		if o.head.Size == st.Head.Size && hasCosignature(o.cp, w.Key.VerifierKey()) {
			continue
		}
		// The state moves first: a crash before the cosignature is stored
		// leaves a checkpoint the next Step cosigns again (the same bytes:
		// Ed25519 signatures are deterministic).
		origin, _, _ := ParseBody(o.text)
		st = State{Origin: origin, LogKey: strings.TrimSpace(w.LogKey), Head: o.head, Note: string(o.cp.Note)}
		if err := SaveState(w.StatePath, st); err != nil {
			return res, err
		}
		if err := w.cosign(ctx, store, o.cp, o.text); err != nil {
			return res, err
		}
		res.Cosigned = append(res.Cosigned, o.head)
		res.Head = o.head
	}
	return res, nil
}

// latestSigned is the head of the largest checkpoint the log key signed
// (zero if none), for a RollbackError.
func (w *Witness) latestSigned(ctx context.Context, store *eventlog.Store, logV note.Verifier) eventlog.TreeHead {
	var latest eventlog.TreeHead
	cps, err := List(ctx, store)
	if err != nil {
		return latest
	}
	for _, cp := range cps {
		if n, err := note.Open(cp.Note, note.VerifierList(logV)); err == nil {
			if _, h, err := ParseBody(n.Text); err == nil && h.Size > latest.Size {
				latest = h
			}
		}
	}
	return latest
}

// checkExtends refuses next unless it extends the cosigned head.
func (w *Witness) checkExtends(ctx context.Context, store *eventlog.Store, cosigned, next eventlog.TreeHead) error {
	switch {
	case cosigned.Size == 0:
		return nil
	case next.Size == cosigned.Size:
		if next.Root != cosigned.Root {
			return &ForkError{Cosigned: cosigned, Offered: next, Reason: "same size, another root"}
		}
		return nil
	}
	proof, err := store.ProveConsistency(ctx, cosigned.Size, next.Size)
	if err != nil {
		if errors.Is(err, events.ErrInvalid) || errors.Is(err, eventlog.ErrTree) {
			return &ForkError{Cosigned: cosigned, Offered: next, Reason: "the log cannot prove it: " + err.Error()}
		}
		return fmt.Errorf("checkpoint: witness: consistency proof: %w", err)
	}
	if err := tlog.CheckTree(proof, next.Size, next.Root, cosigned.Size, cosigned.Root); err != nil {
		return &ForkError{Cosigned: cosigned, Offered: next, Reason: "its consistency proof fails: " + err.Error()}
	}
	return nil
}

func hasCosignature(cp *Checkpoint, vkey string) bool {
	for _, co := range cp.Cosignatures {
		if co.WitnessKey == vkey {
			return true
		}
	}
	return false
}

// cosign signs text with the witness key and stores the signature line.
func (w *Witness) cosign(ctx context.Context, store *eventlog.Store, cp *Checkpoint, text string) error {
	signed, err := note.Sign(&note.Note{Text: text}, w.Key.NoteSigner())
	if err != nil {
		return fmt.Errorf("checkpoint: cosign: %w", err)
	}
	line := string(signed[len(text)+1:]) // after the text and its blank line
	err = store.Exclusive(ctx, func(_ context.Context, tx *eventlog.Tx) error {
		_, err := tx.Exec(`INSERT INTO checkpoint_cosignatures (checkpoint_id, witness_key, signature, at) VALUES (?, ?, ?, ?) ON CONFLICT (checkpoint_id, witness_key) DO NOTHING`,
			cp.ID, w.Key.VerifierKey(), line, time.Now().UnixNano())
		return err
	})
	if err != nil {
		return fmt.Errorf("checkpoint: store the cosignature: %w", err)
	}
	return nil
}

// LoadState reads a witness state file; a missing file is the empty
// state.
func LoadState(path string) (State, error) {
	var st State
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("checkpoint: witness state: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("checkpoint: witness state %s: %w", path, err)
	}
	return st, nil
}

// SaveState writes a witness state file atomically (a new file renamed
// over the old), so a crash leaves the old state or the new one.
func SaveState(path string, st State) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("checkpoint: witness state: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".witness-state-*")
	if err != nil {
		return fmt.Errorf("checkpoint: witness state: %w", err)
	}
	_, werr := tmp.Write(append(b, '\n'))
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("checkpoint: witness state: %w", werr)
	}
	return nil
}
