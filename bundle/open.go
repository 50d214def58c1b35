package bundle

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/gorath/rath/signkey"
)

// ErrInvalid is matched by the error of Open for a bundle that does not
// verify.
var ErrInvalid = errors.New("bundle: verification failed")

// Attestation is what a verified bundle attests: the statement's
// predicate and who signed it.
type Attestation struct {
	Predicate Predicate `json:"predicate"`
	// KeyID is the signer's key id (the SHA-256 of its PKIX DER public
	// key); VerifierKey its note verifier key.
	KeyID       string `json:"keyId"`
	VerifierKey string `json:"verifierKey"`
	Files       int    `json:"files"`
	// LogKeyPinned is true when VerifierKey was the caller's
	// (OpenOptions.LogKey), false when it was the bundle's own.
	LogKeyPinned bool `json:"logKeyPinned"`
	// Witnesses are the witness keys whose cosignatures of the checkpoint
	// verified: those the bundle lists and the pinned ones that cosigned.
	// WitnessesPinned is true when the caller pinned witnesses (then at
	// least one of them cosigned).
	Witnesses       []Witness `json:"witnesses"`
	WitnessesPinned bool      `json:"witnessesPinned"`
}

// OpenOptions say which keys the caller trusts, got from somewhere other
// than the bundle.
type OpenOptions struct {
	// LogKey is the signer's note verifier key as its owner published it.
	// Empty trusts the bundle's own verifier.vkey, which proves only that
	// the bundle is consistent.
	LogKey string
	// Witnesses are the note verifier keys of the witnesses the caller
	// trusts: at least one must have cosigned the checkpoint, or Open
	// fails with a *WitnessError. Empty pins none: the witnesses the
	// bundle lists are checked, but anyone can make such a key.
	Witnesses []string
}

// Open verifies the bundle in dir as the standalone verifier does and
// returns its attestation: the DSSE signature (with vkey, the signer's
// note verifier key as its owner published it; "" trusts the bundle's
// own verifier.vkey), every file against the statement and no file left
// out, the checkpoint's signatures (the signer's and every witness's in
// witnesses.vkey), each line's inclusion proof against the checkpoint's
// root, each payload and salt against its line's commitment, and each
// blob against its name. A failure is an error matching ErrInvalid that
// names the file or seq. It is OpenWith with only the log key.
func Open(dir, vkey string) (*Attestation, error) {
	return OpenWith(dir, OpenOptions{LogKey: vkey})
}

// OpenWith verifies the bundle in dir as Open does, trusting the keys of
// opts; a checkpoint no pinned witness cosigned is a *WitnessError, which
// also matches ErrInvalid. A symbolic link anywhere in the bundle fails:
// a bundle is written without any.
func OpenWith(dir string, opts OpenOptions) (*Attestation, error) {
	vkey := opts.LogKey
	// Names come from the bundle: none may read outside it.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	defer root.Close()
	read := func(name string) ([]byte, error) {
		b, err := root.ReadFile(filepath.FromSlash(name))
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, name, err)
		}
		return b, nil
	}
	if vkey == "" {
		b, err := read(VerifierFile)
		if err != nil {
			return nil, err
		}
		vkey = string(b)
	}
	vkey = strings.TrimSpace(vkey)
	_, pub, err := signkey.ParseVerifierKey(vkey)
	if err != nil {
		return nil, fmt.Errorf("%w: verifier key: %w", ErrInvalid, err)
	}
	keyID := signkey.PublicKeyID(pub)
	envText, err := read(AttestationFile)
	if err != nil {
		return nil, err
	}
	var env envelope
	if err := json.Unmarshal(envText, &env); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, AttestationFile, err)
	}
	body, err := base64.StdEncoding.DecodeString(env.Payload)
	signed := false
	for _, s := range env.Signatures {
		sig, serr := base64.StdEncoding.DecodeString(s.Sig)
		signed = signed || err == nil && serr == nil && s.KeyID == keyID && ed25519.Verify(pub, PAE(env.PayloadType, body), sig)
	}
	if !signed || env.PayloadType != PayloadType {
		return nil, fmt.Errorf("%w: %s: no valid signature by key %s", ErrInvalid, AttestationFile, keyID)
	}
	var st statement
	if err := json.Unmarshal(body, &st); err != nil || st.Type != StatementType || st.PredicateType != PredicateType {
		return nil, fmt.Errorf("%w: %s: not a run bundle's in-toto statement", ErrInvalid, AttestationFile)
	}
	listed := map[string][]byte{}
	for _, s := range st.Subject {
		b, err := read(s.Name)
		if err != nil {
			return nil, err
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != s.Digest["sha256"] {
			return nil, fmt.Errorf("%w: %s: its SHA-256 is not the attested one", ErrInvalid, s.Name)
		}
		listed[s.Name] = b
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, p)
		if rel = filepath.ToSlash(rel); err == nil && d.Type()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%w: %s: a symbolic link", ErrInvalid, rel)
		}
		if err == nil && !d.IsDir() && listed[rel] == nil && rel != AttestationFile {
			return fmt.Errorf("%w: %s: not attested", ErrInvalid, rel)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	witnesses := strings.Fields(string(listed[WitnessesFile]))
	ck, err := ParseCheckpoint(listed[CheckpointFile], vkey, witnesses)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	seen, err := checkWitnesses(listed[CheckpointFile], vkey, witnesses, opts.Witnesses)
	if err != nil {
		return nil, err
	}
	if err := checkLines(listed, st.Predicate, ck); err != nil {
		return nil, err
	}
	return &Attestation{Predicate: st.Predicate, KeyID: keyID, VerifierKey: vkey, Files: len(listed) + 1,
		LogKeyPinned: opts.LogKey != "", Witnesses: seen, WitnessesPinned: len(opts.Witnesses) > 0}, nil
}

// checkLines checks each line's proof against the checkpoint, each
// payload against its line's commitment and each blob against its name.
func checkLines(files map[string][]byte, p Predicate, ck Checkpoint) error {
	lines := bytes.Split(bytes.TrimSuffix(files[EventsFile], []byte("\n")), []byte("\n"))
	var proofs []proof
	if err := json.Unmarshal(files[ProofsFile], &proofs); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalid, ProofsFile, err)
	}
	if len(proofs) != len(lines) || len(lines) != p.Events {
		return fmt.Errorf("%w: %s has %d lines, %s %d proofs, the attestation says %d events", ErrInvalid, EventsFile, len(lines), ProofsFile, len(proofs), p.Events)
	}
	redacted := map[int64]bool{}
	for _, s := range p.Redacted {
		redacted[s] = true
	}
	var named [][]byte
	for i, line := range lines {
		var l struct {
			Leaf    int    `json:"leaf"`
			Seq     int64  `json:"seq"`
			Payload string `json:"payload"`
		}
		if err := json.Unmarshal(line, &l); err != nil {
			return fmt.Errorf("%w: %s line %d: not a leaf line", ErrInvalid, EventsFile, i+1)
		}
		if err := tlog.CheckRecord(proofs[i].Hashes, ck.Size, ck.Root, l.Seq-1, tlog.RecordHash(line)); err != nil {
			return fmt.Errorf("%w: seq %d: its leaf is not in the checkpoint's tree: %w", ErrInvalid, l.Seq, err)
		}
		if l.Leaf != 1 || redacted[l.Seq] {
			continue
		}
		name := PayloadsDir + "/" + strconv.FormatInt(l.Seq, 10)
		payload := files[name+".json"]
		named = append(named, payload)
		h := sha256.New()
		h.Write(files[name+".salt"])
		h.Write(payload)
		if hex.EncodeToString(h.Sum(nil)) != l.Payload {
			return fmt.Errorf("%w: seq %d: %s.json and .salt do not match the line's commitment", ErrInvalid, l.Seq, name)
		}
	}
	for name, b := range files {
		if strings.HasPrefix(name, BlobsDir+"/") {
			named = append(named, b)
		}
	}
	all := bytes.Join(named, nil)
	for name, b := range files {
		h, ok := strings.CutPrefix(name, BlobsDir+"/")
		if !ok {
			continue
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != h {
			return fmt.Errorf("%w: %s: its SHA-256 is not its name", ErrInvalid, name)
		}
		if !bytes.Contains(all, []byte(h)) {
			return fmt.Errorf("%w: %s: no payload names it", ErrInvalid, name)
		}
	}
	return nil
}
