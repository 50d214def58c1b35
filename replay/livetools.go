package replay

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/sandbox"
)

// workspaceCopies makes, for every directory-backed placement the run
// used, a fresh copy of the workspace as it was when the run started: the
// current directory with each file the run changed put back to its
// recorded "before" content (or removed, if the run created it). It
// returns the remap for sandbox.WithRemap and a cleanup.
func workspaceCopies(ctx context.Context, store *events.Store, info *runInfo, lineage []events.Event) (map[events.Placement]events.Placement, func(), error) {
	placements := map[events.Placement]bool{}
	before := map[events.Placement]map[string]string{} // path -> hash before the run's first change
	collect := func(evs []events.Event) error {
		for _, ev := range evs {
			switch ev.Type {
			case events.TypeSessionPlaced, events.TypeToolReturned, events.TypeSessionForked, events.TypeSessionMerged, events.TypeSessionDetached:
			default:
				continue
			}
			p, err := ev.Decode()
			if err != nil {
				return err
			}
			switch e := p.(type) {
			case *events.SessionPlaced:
				placements[events.Placement{Backend: e.Backend, Spec: e.Spec}] = true
			case *events.SessionForked:
				placements[e.Placement] = true
			case *events.SessionMerged:
				placements[e.Placement] = true
			case *events.SessionDetached:
				placements[e.Placement] = true
			}
		}
		return nil
	}
	if err := collect(lineage); err != nil {
		return nil, nil, err
	}
	if err := collect(info.events); err != nil {
		return nil, nil, err
	}
	// Changes are recorded per session; a session's placement at the time
	// is its latest session.placed (or inherited one). Files are matched to
	// every directory placement whose workspace holds them; with one
	// workspace per run, the usual case, that is exact.
	var changes []events.FileChange
	for _, ev := range info.events {
		if ev.Type != events.TypeToolReturned {
			continue
		}
		p, err := ev.Decode()
		if err != nil {
			return nil, nil, err
		}
		changes = append(changes, p.(*events.ToolReturned).Files...)
	}
	remap := map[events.Placement]events.Placement{}
	var dirs []string
	cleanup := func() {
		for _, d := range dirs {
			os.RemoveAll(d)
		}
	}
	for pl := range placements {
		if pl.Backend != "local" && pl.Backend != "bwrap" {
			continue // a remote sandbox cannot be copied from here
		}
		src := pl.Spec
		if st, err := os.Stat(src); err != nil || !st.IsDir() {
			continue
		}
		dst, err := os.MkdirTemp("", "rath-live-tools-")
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		dirs = append(dirs, dst)
		if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("replay: copy workspace %s: %w", src, err)
		}
		firsts := map[string]string{}
		for _, c := range changes {
			if _, seen := firsts[c.Path]; !seen {
				firsts[c.Path] = c.Before
			}
		}
		before[pl] = firsts
		for path, hash := range firsts {
			target := filepath.Join(dst, filepath.FromSlash(strings.TrimPrefix(path, "/workspace/")))
			if !strings.HasPrefix(target, dst+string(filepath.Separator)) {
				continue
			}
			if hash == "" {
				os.Remove(target)
				continue
			}
			b, err := store.GetBlob(ctx, hash)
			if err != nil {
				cleanup()
				return nil, nil, fmt.Errorf("replay: restore %s: %w", path, err)
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				cleanup()
				return nil, nil, err
			}
			if err := os.WriteFile(target, b, fs.FileMode(0o644)); err != nil {
				cleanup()
				return nil, nil, err
			}
		}
		remap[pl] = events.Placement{Backend: pl.Backend, Spec: dst}
	}
	return remap, cleanup, nil
}

// liveToolsCtx installs the workspace remap for a live-tools replay.
func liveToolsCtx(ctx context.Context, remap map[events.Placement]events.Placement) context.Context {
	return sandbox.WithRemap(ctx, remap)
}
