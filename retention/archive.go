package retention

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// Archiver writes one finished run's evidence into dir (a directory of
// its own, created if missing) and returns how many payload bytes (blobs
// included) it holds. Retain redacts a run only after its archive is
// written.
type Archiver interface {
	Archive(ctx context.Context, rt *rath.Runtime, run, dir string) (int64, error)
}

// The files of a LogArchiver directory.
const (
	ArchiveEvents   = "events.jsonl"   // one leaf line per event, in seq order
	ArchivePayloads = "payloads.jsonl" // {"seq","salt","payload"} per line, salt in hex
	ArchiveProofs   = "proofs.json"    // [{"seq","index","hashes"}], RFC 6962 audit paths
	ArchiveHead     = "head.json"      // the tree head the proofs lead to
	ArchiveBlobs    = "blobs"          // one file per blob, named by its hex SHA-256
)

// LogArchiver archives a run as a directory that verifies without the
// store (VerifyArchive): the leaf line of each of the run's events, the
// salt and payload that open its commitment, the blobs those payloads
// name, and an inclusion proof of each leaf in the tree at the log's
// head. An attested bundle (signed checkpoint, DSSE attestation) is an
// Archiver of its own.
type LogArchiver struct{}

type archivedPayload struct {
	Seq      int64  `json:"seq"`
	Salt     string `json:"salt,omitempty"`
	Payload  string `json:"payload,omitempty"` // the payload's exact bytes
	Redacted bool   `json:"redacted,omitempty"`
}

type archivedProof struct {
	Seq    int64       `json:"seq"`
	Index  int64       `json:"index"`
	Hashes []tlog.Hash `json:"hashes"`
}

// Archive writes the run's archive into dir.
func (LogArchiver) Archive(ctx context.Context, rt *rath.Runtime, run, dir string) (int64, error) {
	store := rt.Store()
	head, err := store.TreeHead(ctx)
	if err != nil {
		return 0, fmt.Errorf("retention: archive %s: %w", run, err)
	}
	evs, err := store.Read(ctx, eventlog.Query{RunID: run, ToSeq: head.Size})
	if err != nil {
		return 0, fmt.Errorf("retention: archive %s: %w", run, err)
	}
	if len(evs) == 0 {
		return 0, fmt.Errorf("retention: archive %s: the run has no events", run)
	}
	if err := os.MkdirAll(filepath.Join(dir, ArchiveBlobs), 0o755); err != nil {
		return 0, fmt.Errorf("retention: archive %s: %w", run, err)
	}
	var lines, payloads bytes.Buffer
	var proofs []archivedProof
	var size int64
	for _, ev := range evs {
		line, err := store.LeafLine(ctx, ev.Seq)
		if err != nil {
			return 0, fmt.Errorf("retention: archive %s: %w", run, err)
		}
		proof, err := store.ProveInclusion(ctx, ev.Seq, head.Size)
		if err != nil {
			return 0, fmt.Errorf("retention: archive %s: %w", run, err)
		}
		lines.Write(line)
		lines.WriteByte('\n')
		proofs = append(proofs, archivedProof{Seq: ev.Seq, Index: ev.Seq - 1, Hashes: proof})
		if ev.Redacted {
			// Redacted before: its line stays, its payload is gone.
			payloads.WriteString(`{"seq":` + strconv.FormatInt(ev.Seq, 10) + `,"redacted":true}` + "\n")
			continue
		}
		op, err := store.Opening(ctx, ev.Seq)
		if err != nil {
			return 0, fmt.Errorf("retention: archive %s: %w", run, err)
		}
		b, err := json.Marshal(archivedPayload{Seq: ev.Seq, Salt: hex.EncodeToString(op.Salt), Payload: string(op.Payload)})
		if err != nil {
			return 0, fmt.Errorf("retention: archive %s: %w", run, err)
		}
		payloads.Write(b)
		payloads.WriteByte('\n')
		size += int64(len(op.Payload))
		refs, err := store.BlobRefs(ctx, events.Event{Type: ev.Type, TypeVersion: ev.TypeVersion, Payload: op.Payload})
		if err != nil {
			return 0, fmt.Errorf("retention: archive %s: %w", run, err)
		}
		for _, ref := range refs {
			n, err := archiveBlob(ctx, store, dir, ref)
			if err != nil {
				return 0, fmt.Errorf("retention: archive %s: %w", run, err)
			}
			size += n
		}
	}
	proofText, err := json.MarshalIndent(proofs, "", " ")
	if err != nil {
		return 0, err
	}
	headText, err := json.Marshal(head)
	if err != nil {
		return 0, err
	}
	for name, b := range map[string][]byte{ArchiveEvents: lines.Bytes(), ArchivePayloads: payloads.Bytes(), ArchiveProofs: proofText, ArchiveHead: headText} {
		if err := writeFile(filepath.Join(dir, name), b); err != nil {
			return 0, fmt.Errorf("retention: archive %s: %w", run, err)
		}
	}
	return size, nil
}

// archiveBlob copies one blob into the archive; a hash that names no
// stored blob (a payload may quote any hash) is skipped.
func archiveBlob(ctx context.Context, store *eventlog.Store, dir, ref string) (int64, error) {
	path := filepath.Join(dir, ArchiveBlobs, ref)
	if fi, err := os.Stat(path); err == nil {
		return fi.Size(), nil
	}
	b, err := store.GetBlob(ctx, ref)
	if errors.Is(err, eventlog.ErrBlobNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return int64(len(b)), writeFile(path, b)
}

// writeFile writes b to path durably, through a temporary file.
func writeFile(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// ErrArchive is matched by every failure of VerifyArchive.
var ErrArchive = errors.New("retention: the archive does not verify")

// VerifyArchive checks a LogArchiver directory without the store: every
// leaf line is in the tree of head.json (its inclusion proof), every
// payload opens its line's commitment (an event redacted before has its
// line and no payload), every blob matches its name, and every blob a
// payload names is there. It returns the tree head the archive proves
// against, which a verifier compares with one it trusts (a checkpoint, a
// head kept elsewhere).
func VerifyArchive(dir string) (Verified, error) {
	var head eventlog.TreeHead
	var v Verified
	fail := func(format string, args ...any) (Verified, error) {
		return Verified{}, fmt.Errorf("%w: %s: %s", ErrArchive, dir, fmt.Sprintf(format, args...))
	}
	b, err := os.ReadFile(filepath.Join(dir, ArchiveHead))
	if err != nil {
		return fail("%v", err)
	}
	if err := json.Unmarshal(b, &head); err != nil || head.Size < 1 {
		return fail("%s is not a tree head", ArchiveHead)
	}
	var proofs []archivedProof
	if b, err = os.ReadFile(filepath.Join(dir, ArchiveProofs)); err != nil {
		return fail("%v", err)
	}
	if err := json.Unmarshal(b, &proofs); err != nil {
		return fail("%s: %v", ArchiveProofs, err)
	}
	lines, err := readLines(filepath.Join(dir, ArchiveEvents))
	if err != nil {
		return fail("%v", err)
	}
	payloadLines, err := readLines(filepath.Join(dir, ArchivePayloads))
	if err != nil {
		return fail("%v", err)
	}
	if len(lines) == 0 || len(lines) != len(proofs) || len(lines) != len(payloadLines) {
		return fail("%d leaf lines, %d proofs and %d payloads: want the same number, at least one", len(lines), len(proofs), len(payloadLines))
	}
	for i, line := range lines {
		var leaf struct {
			Seq         int64  `json:"seq"`
			Payload     string `json:"payload"`
			Type        string `json:"type"`
			TypeVersion int    `json:"type_version"`
		}
		if err := json.Unmarshal(line, &leaf); err != nil || leaf.Seq < 1 {
			return fail("line %d is not a leaf line", i+1)
		}
		p := proofs[i]
		if p.Seq != leaf.Seq || p.Index != leaf.Seq-1 {
			return fail("seq %d: its proof is for seq %d", leaf.Seq, p.Seq)
		}
		if err := tlog.CheckRecord(p.Hashes, head.Size, head.Root, p.Index, tlog.RecordHash(line)); err != nil {
			return fail("seq %d: its leaf is not in the tree of %s: %v", leaf.Seq, head, err)
		}
		var ap archivedPayload
		if err := json.Unmarshal(payloadLines[i], &ap); err != nil || ap.Seq != leaf.Seq {
			return fail("seq %d: payload line %d is not its payload", leaf.Seq, i+1)
		}
		if ap.Redacted {
			v.Redacted++ // proven in the tree; its payload was deleted before
			continue
		}
		salt, err := hex.DecodeString(ap.Salt)
		if err != nil {
			return fail("seq %d: its salt is not hex", leaf.Seq)
		}
		commit := eventlog.PayloadCommitment(salt, []byte(ap.Payload))
		if hex.EncodeToString(commit[:]) != leaf.Payload {
			return fail("seq %d: its payload does not open its leaf's commitment", leaf.Seq)
		}
		if err := checkRefs(dir, leaf.Type, leaf.TypeVersion, []byte(ap.Payload)); err != nil {
			return fail("seq %d: %v", leaf.Seq, err)
		}
	}
	entries, err := os.ReadDir(filepath.Join(dir, ArchiveBlobs))
	if err != nil {
		return fail("%v", err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, ArchiveBlobs, e.Name()))
		if err != nil {
			return fail("%v", err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != e.Name() {
			return fail("blob %s does not match its name", e.Name())
		}
	}
	v.Head, v.Events = head, len(lines)
	return v, nil
}

// Verified is what VerifyArchive checked: the events, of which Redacted
// had their payloads deleted before the archive (their lines are proven,
// their payloads absent), and the tree head it proves them against.
type Verified struct {
	Head     eventlog.TreeHead
	Events   int
	Redacted int
}

// checkRefs checks that the blobs a decoded payload names are archived.
func checkRefs(dir, typ string, version int, payload []byte) error {
	p, err := events.Decode(typ, version, payload)
	if err != nil {
		return nil // a type this build does not know: its commitment was checked
	}
	br, ok := p.(events.BlobReferrer)
	if !ok {
		return nil
	}
	for _, ref := range br.BlobRefs() {
		if _, err := os.Stat(filepath.Join(dir, ArchiveBlobs, ref)); err != nil {
			return fmt.Errorf("blob %s it names is not in the archive", ref)
		}
	}
	return nil
}

func readLines(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<30)
	for sc.Scan() {
		out = append(out, bytes.Clone(sc.Bytes()))
	}
	return out, sc.Err()
}

// archiveRun writes run's archive with arch and installs it as root/RUN.
// It is written under root/.RUN.partial (a directory only Retain makes,
// so one found there was left by a retain that was stopped, and is
// removed first) and renamed into place once written and, for a
// LogArchiver, verified. An archive already at root/RUN is of a run that
// is not retained (Retain never selects one that is), left by a retain
// stopped between writing it and the redaction: the new one replaces it.
// A stop at any point leaves root/RUN whole or absent, and the payloads
// in the store until the redaction commits.
func archiveRun(ctx context.Context, rt *rath.Runtime, arch Archiver, run, root string) (int64, error) {
	final := filepath.Join(root, run)
	stage := filepath.Join(root, "."+run+".partial")
	if err := os.RemoveAll(stage); err != nil {
		return 0, fmt.Errorf("retention: archive %s: clear what a stopped retain left: %w", run, err)
	}
	if err := os.MkdirAll(stage, 0o755); err != nil {
		return 0, fmt.Errorf("retention: archive %s: %w", run, err)
	}
	defer os.RemoveAll(stage)
	dir := filepath.Join(stage, run)
	n, err := arch.Archive(ctx, rt, run, dir)
	if err != nil {
		return 0, err
	}
	if _, ok := arch.(LogArchiver); ok {
		// Redact only what verifiably left the store.
		if _, err := VerifyArchive(dir); err != nil {
			return 0, err
		}
	}
	if _, err := os.Lstat(final); err == nil {
		if err := os.Rename(final, filepath.Join(stage, "replaced")); err != nil {
			return 0, fmt.Errorf("retention: archive %s: move the earlier archive aside: %w", run, err)
		}
	}
	if err := os.Rename(dir, final); err != nil {
		return 0, fmt.Errorf("retention: archive %s: %w", run, err)
	}
	return n, syncDir(root)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
