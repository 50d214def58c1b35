package cli

import (
	"context"
	"fmt"
	"github.com/gorath/rath"
	"os"

	"github.com/gorath/rath/bundle"
	"github.com/gorath/rath/checkpoint"
	"github.com/gorath/rath/dossier"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/replay"
	"github.com/gorath/rath/signkey"
)

// bundleFlags are export's flags for an attested run bundle.
type bundleFlags struct {
	dir      string
	key      string
	noReplay bool
}

// exportBundle writes the attested bundle of run runID (docs/EVIDENCE.md,
// "Attested run bundles"). The replay verdict it attests comes from a
// replay run here, in-process, against the run's record, unless
// --no-replay; a diverged replay still writes the bundle (the verdict says
// so) and exits as a divergence does.
func (a *app) exportBundle(ctx context.Context, runID string, f bundleFlags) error {
	path := f.key
	if path == "" {
		path = os.Getenv("RATH_SIGNING_KEY")
	}
	if path == "" {
		return fmt.Errorf("export --bundle: %w", bundle.ErrNoKey)
	}
	key, err := signkey.Load(path)
	if err != nil {
		return fmt.Errorf("export --bundle: %w", err)
	}
	rt, err := a.open(ctx)
	if err != nil {
		return err
	}
	opts := bundle.Options{Key: key, StoredCheckpoint: storedCheckpoint(rt.Store(), key)}
	diverged := false
	if !f.noReplay {
		rep, err := a.bundleReplay(ctx, rt, runID)
		if err != nil {
			return err
		}
		opts.Replay = &bundle.Replay{OK: rep.OK(), Verdict: rep.Verdict()}
		diverged = !rep.OK()
	}
	res, err := bundle.Write(ctx, rt.Store(), runID, f.dir, opts)
	if err != nil {
		return err
	}
	p := res.Predicate
	fmt.Fprintf(a.stderr, "wrote %s: run %s, %s (seqs %d to %d), %s, %s; checkpoint %s size %d signed by %s; replay: %s\n",
		res.Dir, p.Run, plural(int(p.Events), "event"), p.FirstSeq, p.LastSeq, plural(res.Blobs, "blob"), plural(res.Files, "file"), p.Checkpoint.Origin, p.Checkpoint.Size, p.Checkpoint.SignedBy, p.Replay.Verdict)
	fmt.Fprintf(a.stderr, "verify it without rath: go run github.com/gorath/rath/cmd/rathverify@VERSION -log-key LOG.vkey -witness WITNESS.vkey %s (docs/EVIDENCE.md)\n", res.Dir)
	if diverged {
		return errDiverged
	}
	return nil
}

// bundleReplay replays run runID for its bundle's verdict. A run whose
// subject was erased has no workflow to rebuild: its verdict names the
// answers that could not be checked, as rath replay says.
func (a *app) bundleReplay(ctx context.Context, rt *rath.Runtime, runID string) (*replay.Report, error) {
	if rep, err := replay.ErasedRun(ctx, rt, runID); err != nil || rep != nil {
		if err != nil {
			return nil, fmt.Errorf("export --bundle: replay %s: %w", runID, err)
		}
		return rep, nil
	}
	wf, err := a.workflowForRun(ctx, rt, runID, rath.ReplayMode)
	if err != nil {
		return nil, fmt.Errorf("export --bundle: replay %s: %w (--no-replay attests no verdict)", runID, err)
	}
	rep, err := replay.Run(ctx, rt, runID, wf, replay.WithProgress(a.progress("replay")))
	if err != nil {
		return nil, fmt.Errorf("export --bundle: replay %s: %w", runID, err)
	}
	return rep, nil
}

// storedCheckpoint gives a bundle the store's own signed checkpoint with
// its witnesses' cosignatures (checkpoint.ForExport).
func storedCheckpoint(st *eventlog.Store, key *signkey.Key) func(context.Context, int64) ([]byte, []string, error) {
	return func(ctx context.Context, minSize int64) ([]byte, []string, error) {
		cp, err := checkpoint.ForExport(ctx, st, key, minSize)
		if err != nil {
			return nil, nil, err
		}
		return cp.Signed(), cp.Witnesses(), nil
	}
}

// bundleAttestation verifies the bundle in dir with the keys pinned by
// --log-key and --witness-key (none: the bundle's own, which the dossier
// says) and returns what the dossier shows of it.
func (a *app) bundleAttestation(dir, runID string) (*dossier.Attestation, error) {
	opts := bundle.OpenOptions{Witnesses: a.trustedWitnesses}
	switch len(a.trustedKeys) {
	case 0:
	case 1:
		opts.LogKey = a.trustedKeys[0]
	default:
		return nil, fmt.Errorf("dossier --bundle: a bundle has one signer: give one --log-key, not %d", len(a.trustedKeys))
	}
	at, err := bundle.OpenWith(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("dossier --bundle: %w", err)
	}
	p := at.Predicate
	if p.Run != runID {
		return nil, fmt.Errorf("dossier --bundle: %s is the bundle of run %s, not %s", dir, p.Run, runID)
	}
	ws := make([]dossier.Witness, len(at.Witnesses))
	for i, w := range at.Witnesses {
		ws[i] = dossier.Witness{Name: w.Name, KeyID: w.KeyID, Pinned: w.Pinned}
	}
	return &dossier.Attestation{Bundle: dir, SignedBy: p.Checkpoint.SignedBy, KeyID: at.KeyID, WitnessedBy: p.Checkpoint.WitnessedBy,
		Origin: p.Checkpoint.Origin, Size: p.Checkpoint.Size, Root: p.Checkpoint.Root.String(), FirstSeq: p.FirstSeq, LastSeq: p.LastSeq,
		Replay: p.Replay.Verdict, LogKeyPinned: at.LogKeyPinned, WitnessKeys: ws, WitnessesPinned: at.WitnessesPinned}, nil
}
