package retention

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/gorath/rath"
	"github.com/gorath/rath/bundle"
	"github.com/gorath/rath/checkpoint"
	"github.com/gorath/rath/signkey"
)

// BundleArchiver archives each run as an attested run bundle (package
// bundle) signed by Key, carrying the store's own checkpoint with its
// witnesses' cosignatures (checkpoint.ForExport): an archive a stranger
// verifies without rath, as docs/EVIDENCE.md describes. It opens and
// checks the bundle it wrote before it returns, so no payload is deleted
// that did not verifiably leave the store.
type BundleArchiver struct {
	Key *signkey.Key
}

// Archive writes the run's bundle into dir and returns the bytes of the
// payloads and blobs it holds.
func (b BundleArchiver) Archive(ctx context.Context, rt *rath.Runtime, run, dir string) (int64, error) {
	if b.Key == nil {
		return 0, fmt.Errorf("retention: archive %s: %w", run, bundle.ErrNoKey)
	}
	st := rt.Store()
	_, err := bundle.Write(ctx, st, run, dir, bundle.Options{Key: b.Key,
		StoredCheckpoint: func(ctx context.Context, minSize int64) ([]byte, []string, error) {
			cp, err := checkpoint.ForExport(ctx, st, b.Key, minSize)
			if err != nil {
				return nil, nil, err
			}
			return cp.Signed(), cp.Witnesses(), nil
		}})
	if err != nil {
		return 0, fmt.Errorf("retention: archive %s: %w", run, err)
	}
	if _, err := bundle.Open(dir, b.Key.VerifierKey()); err != nil {
		return 0, fmt.Errorf("retention: archive %s does not verify: %w", run, err)
	}
	var size int64
	for _, sub := range []string{bundle.PayloadsDir, bundle.BlobsDir} {
		err := filepath.WalkDir(filepath.Join(dir, sub), func(_ string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			info, err := d.Info()
			if err == nil {
				size += info.Size()
			}
			return err
		})
		if err != nil && !errorsIsNotExist(err) {
			return 0, fmt.Errorf("retention: archive %s: %w", run, err)
		}
	}
	return size, nil
}

func errorsIsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
