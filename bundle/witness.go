package bundle

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/gorath/rath/signkey"
)

// ErrUnwitnessed is matched by a *WitnessError: the auditor pinned
// witnesses and none of them cosigned the bundle's checkpoint.
var ErrUnwitnessed = errors.New("bundle: no pinned witness cosigned the checkpoint")

// WitnessError reports a checkpoint cosigned by no witness the auditor
// pinned. Seen are the witness keys the bundle names (witnesses.vkey),
// whose cosignatures verified but which the auditor does not trust: a
// key holder can make a witness key of its own, named like the real one.
type WitnessError struct {
	Pinned []Witness
	Seen   []Witness
}

func (e *WitnessError) Error() string {
	seen := "by no witness at all"
	if len(e.Seen) > 0 {
		seen = "only by " + listWitnesses(e.Seen)
	}
	return fmt.Sprintf("%s: it is cosigned %s; pinned: %s", ErrUnwitnessed.Error(), seen, listWitnesses(e.Pinned))
}

// Is makes errors.Is true for ErrUnwitnessed and ErrInvalid: the bundle
// does not verify against what the auditor trusts.
func (e *WitnessError) Is(target error) bool { return target == ErrUnwitnessed || target == ErrInvalid }

// Witness is a witness key a verification saw.
type Witness struct {
	Name string `json:"name"`
	// KeyID is the hex SHA-256 of the key's PKIX DER encoding, as for the
	// signer's key: names can be copied, key ids cannot.
	KeyID       string `json:"key_id"`
	VerifierKey string `json:"verifier_key"`
	// Pinned is true for a key the auditor gave (OpenOptions.Witnesses),
	// false for one only the bundle names.
	Pinned bool `json:"pinned"`
}

func (w Witness) String() string {
	s := w.Name + " (key " + w.KeyID
	if !w.Pinned {
		s += ", not pinned"
	}
	return s + ")"
}

// listWitnesses lists ws for a message, or says there are none.
func listWitnesses(ws []Witness) string {
	if len(ws) == 0 {
		return "none"
	}
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.String()
	}
	return strings.Join(out, ", ")
}

// parseWitness reads a note verifier key as a Witness.
func parseWitness(vkey string, pinned bool) (Witness, note.Verifier, error) {
	v, pub, err := signkey.ParseVerifierKey(vkey)
	if err != nil {
		return Witness{}, nil, err
	}
	return Witness{Name: v.Name(), KeyID: signkey.PublicKeyID(pub), VerifierKey: strings.TrimSpace(vkey), Pinned: pinned}, v, nil
}

// checkWitnesses returns the witness keys of the checkpoint: those the
// bundle lists (whose cosignatures ParseCheckpoint already required),
// then each pinned key that cosigned it. With pins and none of them
// cosigning, the error is a *WitnessError.
func checkWitnesses(signed []byte, signer string, listed, pinned []string) ([]Witness, error) {
	var seen []Witness
	byKey := map[string]int{}
	for _, k := range listed {
		w, _, err := parseWitness(k, false)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, WitnessesFile, err)
		}
		byKey[w.KeyID] = len(seen)
		seen = append(seen, w)
	}
	if len(pinned) == 0 {
		return seen, nil
	}
	sv, _, err := signkey.ParseVerifierKey(signer)
	if err != nil {
		return nil, fmt.Errorf("%w: verifier key: %w", ErrInvalid, err)
	}
	vs := []note.Verifier{sv}
	pins := make([]Witness, 0, len(pinned))
	for _, k := range pinned {
		w, v, err := parseWitness(k, true)
		if err != nil {
			return nil, fmt.Errorf("%w: pinned witness key: %w", ErrInvalid, err)
		}
		pins = append(pins, w)
		vs = append(vs, v)
	}
	// A signature line of a pinned key's name and hash that does not
	// verify fails here; lines of other keys are left unverified.
	n, err := note.Open(signed, note.VerifierList(vs...))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, CheckpointFile, err)
	}
	cosigned := false
	for i, w := range pins {
		v := vs[i+1]
		for _, s := range n.Sigs {
			if s.Name != v.Name() || s.Hash != v.KeyHash() {
				continue
			}
			cosigned = true
			if j, ok := byKey[w.KeyID]; ok {
				seen[j].Pinned = true
			} else {
				byKey[w.KeyID] = len(seen)
				seen = append(seen, w)
			}
		}
	}
	if !cosigned {
		return nil, &WitnessError{Pinned: pins, Seen: seen}
	}
	return seen, nil
}
