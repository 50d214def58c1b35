package bundle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/signkey"
)

// Names of the files of a bundle.
const (
	EventsFile      = "events.jsonl"
	ProofsFile      = "proofs.json"
	CheckpointFile  = "checkpoint"
	AttestationFile = "attestation.dsse.json"
	VerifierFile    = "verifier.vkey"
	PublicPEMFile   = "public.pem"
	WitnessesFile   = "witnesses.vkey"
	VerifyMDFile    = "VERIFY.md"
	PayloadsDir     = "payloads"
	BlobsDir        = "blobs"
)

// Store is what Write reads of the log; *eventlog.Store implements it.
type Store interface {
	Read(ctx context.Context, q eventlog.Query) ([]events.Event, error)
	Leaves(ctx context.Context, seqs []int64) ([]eventlog.Leaf, error)
	TreeHead(ctx context.Context) (eventlog.TreeHead, error)
	TreeHeadAt(ctx context.Context, size int64) (eventlog.TreeHead, error)
	ProveInclusion(ctx context.Context, seq, size int64) (tlog.RecordProof, error)
	GetBlobs(ctx context.Context, hashes []string) (map[string][]byte, error)
}

var _ Store = (*eventlog.Store)(nil)

// Options configure Write.
type Options struct {
	// Key signs the attestation and, by default, the checkpoint. Required.
	Key *signkey.Key
	// Checkpoint returns a signed note (C2SP tlog-checkpoint, signed by Key,
	// with any witness cosignatures) of the log's tree at minSize leaves or
	// more: a stored, witnessed checkpoint. Nil signs a fresh one of the
	// current tree head with Key (SignCheckpoint).
	Checkpoint func(ctx context.Context, minSize int64) ([]byte, error)
	// StoredCheckpoint, when set instead of Checkpoint, also returns the
	// verifier keys of the witnesses that cosigned the note it returns;
	// they replace Witnesses.
	StoredCheckpoint func(ctx context.Context, minSize int64) (signed []byte, witnesses []string, err error)
	// Origin is the origin line of a checkpoint Write signs itself. Empty
	// means the key's name.
	Origin string
	// Witnesses are the note verifier keys of witnesses whose cosignatures
	// the checkpoint must carry; each is checked, listed in the predicate
	// and shipped in witnesses.vkey. Nil requires none.
	Witnesses []string
	// Replay is the verdict of a replay of the run, named in the
	// attestation. Nil means "not replayed".
	Replay *Replay
}

// Result says what Write wrote.
type Result struct {
	Dir        string
	Predicate  Predicate
	Files      int // files in the bundle, the attestation included
	Blobs      int
	Checkpoint []byte // the signed note
}

// Write writes the bundle of run runID into dir, which must not exist or
// be empty; nothing is left there on failure. The run's events are those
// recorded with its id, plus the streams that concern it without one: the
// decisions on its approval requests, its submission, leases and resumes,
// and its scores with the events they read.
// It returns ErrNoKey, ErrExists, ErrNoEvents, ErrCheckpoint (wrapped), a
// *eventlog.VerifyError for an event whose leaf cannot be computed, or an
// I/O error.
func Write(ctx context.Context, st Store, runID, dir string, opts Options) (*Result, error) {
	if opts.Key == nil {
		return nil, ErrNoKey
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrExists, dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	evs, err := runEvents(ctx, st, runID)
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 {
		return nil, fmt.Errorf("%w: %q", ErrNoEvents, runID)
	}
	seqs := make([]int64, len(evs))
	for i, ev := range evs {
		seqs[i] = ev.Seq
	}
	leaves, err := st.Leaves(ctx, seqs)
	if err != nil {
		return nil, fmt.Errorf("bundle: read the run's leaves: %w", err)
	}
	ck, note, err := checkpoint(ctx, st, seqs[len(seqs)-1], &opts)
	if err != nil {
		return nil, err
	}
	f := newFiles()
	var lines bytes.Buffer
	proofs := make([]proof, len(leaves))
	var redacted []int64
	for i, l := range leaves {
		lines.Write(l.Line)
		lines.WriteByte('\n')
		p, err := st.ProveInclusion(ctx, l.Seq, ck.Size)
		if err != nil {
			return nil, fmt.Errorf("bundle: inclusion proof of seq %d: %w", l.Seq, err)
		}
		proofs[i] = proof{Index: l.Seq - 1, Hashes: p}
		switch {
		case l.Salt != nil:
			name := strconv.FormatInt(l.Seq, 10)
			f.add(PayloadsDir+"/"+name+".json", l.Payload)
			f.add(PayloadsDir+"/"+name+".salt", l.Salt)
		case merkleLine(l.Line):
			redacted = append(redacted, l.Seq) // its payload and salt were deleted
		}
	}
	f.add(EventsFile, lines.Bytes())
	pj, err := json.Marshal(proofs)
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	f.add(ProofsFile, append(pj, '\n'))
	f.add(CheckpointFile, note)
	blobs, err := reachableBlobs(ctx, st, leaves)
	if err != nil {
		return nil, err
	}
	for h, b := range blobs {
		f.add(BlobsDir+"/"+h, b)
	}
	f.add(VerifierFile, []byte(opts.Key.VerifierKey()+"\n"))
	f.add(PublicPEMFile, opts.Key.PublicPEM())
	if len(opts.Witnesses) > 0 {
		var w bytes.Buffer
		for _, k := range opts.Witnesses {
			w.WriteString(k + "\n")
		}
		f.add(WitnessesFile, w.Bytes())
	}
	pred := predicate(runID, evs, ck, opts)
	pred.Redacted = redacted
	if err := addVerifier(f, pred, opts.Key); err != nil {
		return nil, err
	}
	env, err := attest(f, pred, opts.Key)
	if err != nil {
		return nil, err
	}
	f.add(AttestationFile, env)
	if err := f.writeTo(dir); err != nil {
		return nil, err
	}
	return &Result{Dir: dir, Predicate: pred, Files: len(f.m), Blobs: len(blobs), Checkpoint: note}, nil
}

// proof is one line of proofs.json: the leaf's index and its audit path
// (base64 hashes, RFC 9162 order: from the leaf up).
type proof struct {
	Index  int64       `json:"index"`
	Hashes []tlog.Hash `json:"hashes"`
}

// merkleLine reports whether a leaf line is of the Merkle format (it
// commits to a payload) rather than a hash-chain record.
func merkleLine(line []byte) bool { return bytes.Contains(line, []byte(`,"leaf":1,`)) }

// runEvents reads the run's events: those recorded with its id, and the
// streams that concern it without one, in seq order.
func runEvents(ctx context.Context, st Store, runID string) ([]events.Event, error) {
	evs, err := st.Read(ctx, eventlog.Query{RunID: runID})
	if err != nil {
		return nil, fmt.Errorf("bundle: read run %s: %w", runID, err)
	}
	streams := []string{"submit:" + runID, "lease:" + runID, "resume:" + runID}
	for _, ev := range evs {
		if ev.Type == events.TypeApprovalRequested {
			streams = append(streams, ev.Stream)
		}
	}
	have := make(map[int64]bool, len(evs))
	for _, ev := range evs {
		have[ev.Seq] = true
	}
	for _, s := range streams {
		more, err := st.Read(ctx, eventlog.Query{Stream: s})
		if err != nil {
			return nil, fmt.Errorf("bundle: read stream %s: %w", s, err)
		}
		for _, ev := range more {
			if !have[ev.Seq] {
				have[ev.Seq] = true
				evs = append(evs, ev)
			}
		}
	}
	scores, err := runScores(ctx, st, runID, have)
	if err != nil {
		return nil, err
	}
	evs = append(evs, scores...)
	slices.SortFunc(evs, func(a, b events.Event) int { return int(a.Seq - b.Seq) })
	return evs, nil
}

// runScores reads the scores of the run (score.recorded events naming it,
// recorded in an experiment's eval run) and the events they read that
// the bundle does not hold yet (a judge's call), so that a bundle shows
// each score with what it was computed from.
func runScores(ctx context.Context, st Store, runID string, have map[int64]bool) ([]events.Event, error) {
	all, err := st.Read(ctx, eventlog.Query{Types: []string{events.TypeScoreRecorded}})
	if err != nil {
		return nil, fmt.Errorf("bundle: read scores: %w", err)
	}
	var out []events.Event
	for _, ev := range all {
		p, err := ev.Decode()
		if err != nil {
			continue // a redacted score: not the run's to show
		}
		sc := p.(*events.ScoreRecorded)
		if sc.Run != runID || have[ev.Seq] {
			continue
		}
		have[ev.Seq] = true
		out = append(out, ev)
		for _, r := range sc.Reads {
			if have[r.Seq] {
				continue
			}
			read, err := st.Read(ctx, eventlog.Query{FromSeq: r.Seq, ToSeq: r.Seq})
			if err != nil {
				return nil, fmt.Errorf("bundle: read seq %d, read by the score at seq %d: %w", r.Seq, ev.Seq, err)
			}
			for _, e := range read {
				have[e.Seq] = true
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// files are a bundle's files by slash-separated name, kept in memory
// until written.
type files struct{ m map[string][]byte }

func newFiles() *files { return &files{m: map[string][]byte{}} }

func (f *files) add(name string, b []byte) { f.m[name] = b }

// names returns the file names, sorted.
func (f *files) names() []string {
	out := make([]string, 0, len(f.m))
	for n := range f.m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// writeTo writes the files into a fresh directory beside dir and renames
// it to dir, so a failure leaves no partial bundle.
func (f *files) writeTo(dir string) error {
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, ".bundle-*")
	if err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	for _, name := range f.names() {
		p := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("bundle: %w", err)
		}
		if err := os.WriteFile(p, f.m[name], 0o644); err != nil {
			return fmt.Errorf("bundle: %w", err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	os.Remove(dir) // an empty directory given by the caller
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	ok = true
	return nil
}
