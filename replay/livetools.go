package replay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/builtin"
	"github.com/gorath/rath/sandbox"
)

var (
	// ErrSpecialFile is matched by a *SpecialFileError.
	ErrSpecialFile = errors.New("replay: the workspace holds a special file")
	// ErrUnprovenWorkspace is matched by an *UntrackedChangesError.
	ErrUnprovenWorkspace = errors.New("replay: the record does not prove the workspace's starting state")
)

// SpecialFileError reports a FIFO, socket or device in a workspace that a
// live-tools replay was to copy. Such files are refused rather than
// copied: opening a FIFO blocks, and a device is a door to the host.
type SpecialFileError struct {
	Workspace string
	Path      string // relative to Workspace
	Mode      os.FileMode
}

func (e *SpecialFileError) Error() string {
	return fmt.Sprintf("replay: workspace %s holds %s (%s), which a live-tools replay does not copy: remove it or replay without --live-tools",
		e.Workspace, e.Path, fileKind(e.Mode))
}

// Is makes errors.Is(err, ErrSpecialFile) true.
func (e *SpecialFileError) Is(target error) bool { return target == ErrSpecialFile }

// UntrackedChangesError reports a tool call whose changes to the workspace
// the record does not hold (tracking was off, or a file was too large, or
// the command did not run to an exit status). After it the recorded
// "before" of a file is not proof of the starting state: the model could
// have written anything there untracked, so the copy cannot be rebuilt.
type UntrackedChangesError struct {
	Seq    int64
	CallID string
	Tool   string
	Reason string
}

func (e *UntrackedChangesError) Error() string {
	return fmt.Sprintf("replay: cannot rebuild the workspace for live tools: %s call %s (seq %d) changed files the record does not hold (%s); replay without --live-tools",
		e.Tool, e.CallID, e.Seq, e.Reason)
}

// Is makes errors.Is(err, ErrUnprovenWorkspace) true.
func (e *UntrackedChangesError) Is(target error) bool { return target == ErrUnprovenWorkspace }

// Markers flow/builtin appends to a command's output when its file
// changes were not all recorded (see changes.summary there).
var untrackedMarkers = []string{"\n[file changes not tracked: ", "\n[changed but not recorded, "}

// workspaceCopies makes, for every directory-backed placement the run
// used, a fresh copy of the workspace as it was when the run started: the
// current directory with each file the run changed put back to its
// recorded "before" content (or removed, if the run created it). It
// returns the remap for sandbox.WithRemap and a cleanup. The copies are
// made in the directory in (empty: the system's temporary directory).
//
// The workspace is the model's work and is hostile: the copy never
// follows a link (links are copied as links), refuses special files,
// keeps sparse files sparse, and the restore goes through an os.Root on
// the copy, so no recorded path or planted link reaches the host.
func workspaceCopies(ctx context.Context, store *eventlog.Store, info *runInfo, lineage []events.Event, in string) (map[events.Placement]events.Placement, func(), error) {
	placements := map[events.Placement]bool{}
	collect := func(evs []events.Event) error {
		for _, ev := range evs {
			switch ev.Type {
			case events.TypeSessionPlaced, events.TypeSessionForked, events.TypeSessionMerged, events.TypeSessionDetached:
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
	var srcs []events.Placement
	for pl := range placements {
		if pl.Backend != "local" && pl.Backend != "bwrap" {
			continue // a remote sandbox cannot be copied from here
		}
		if st, err := os.Stat(pl.Spec); err != nil || !st.IsDir() {
			continue
		}
		srcs = append(srcs, pl)
	}
	if len(srcs) == 0 {
		return map[events.Placement]events.Placement{}, func() {}, nil
	}
	slices.SortFunc(srcs, func(a, b events.Placement) int {
		return strings.Compare(a.Backend+"\x00"+a.Spec, b.Backend+"\x00"+b.Spec)
	})
	// Changes are recorded per session; a session's placement at the time
	// is its latest session.placed (or inherited one). Files are matched to
	// every directory placement whose workspace holds them; with one
	// workspace per run, the usual case, that is exact.
	firsts, err := firstBefores(ctx, store, info.events)
	if err != nil {
		return nil, nil, err
	}
	remap := map[events.Placement]events.Placement{}
	var dirs []string
	cleanup := func() {
		for _, d := range dirs {
			os.RemoveAll(d)
		}
	}
	for _, pl := range srcs {
		dst, err := os.MkdirTemp(in, "rath-live-tools-")
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		dirs = append(dirs, dst)
		if err := copyTree(ctx, pl.Spec, dst); err != nil {
			cleanup()
			return nil, nil, err
		}
		if err := restore(ctx, store, dst, firsts); err != nil {
			cleanup()
			return nil, nil, err
		}
		remap[pl] = events.Placement{Backend: pl.Backend, Spec: dst}
	}
	return remap, cleanup, nil
}

// firstBefores returns each changed path's content hash before the run's
// first change to it ("" for a file the run created). It fails with an
// *UntrackedChangesError when a command's changes are missing from the
// record: the model may have planted content untracked and then changed
// it tracked, so a later "before" would smuggle it into the copy, and
// files it left untracked would be in the copy anyway.
func firstBefores(ctx context.Context, store *eventlog.Store, evs []events.Event) (map[string]string, error) {
	firsts := map[string]string{}
	for _, ev := range evs {
		if ev.Type != events.TypeToolReturned {
			continue
		}
		p, err := ev.Decode()
		if err != nil {
			return nil, err
		}
		ret := p.(*events.ToolReturned)
		if reason, err := untracked(ctx, store, ret); err != nil {
			return nil, err
		} else if reason != "" {
			return nil, &UntrackedChangesError{Seq: ev.Seq, CallID: ret.CallID, Tool: ret.Tool, Reason: reason}
		}
		for _, c := range ret.Files {
			if _, seen := firsts[c.Path]; !seen {
				firsts[c.Path] = c.Before
			}
		}
	}
	return firsts, nil
}

// untracked says why a command's file changes are not all in the record,
// or "" when they are (or the tool is not a command).
func untracked(ctx context.Context, store *eventlog.Store, ret *events.ToolReturned) (string, error) {
	if ret.Tool != builtin.RunShellCommand && ret.Tool != builtin.RunCode {
		return "", nil
	}
	if ret.ExitCode == nil && ret.SandboxID != "" {
		switch ret.ErrorKind {
		case flow.ToolErrFailed, flow.ToolErrTimeout, flow.ToolErrPanic:
			// The command reached the sandbox and may have run partly.
			return "it ended without an exit status: " + ret.ErrorKind, nil
		}
	}
	if ret.OutputRef == "" {
		return "", nil
	}
	out, err := store.GetBlob(ctx, ret.OutputRef)
	if err != nil {
		return "", fmt.Errorf("replay: read the output of call %s: %w", ret.CallID, err)
	}
	// A model can print a marker itself; that only makes the replay
	// refuse, which is the safe side.
	for _, m := range untrackedMarkers {
		if i := strings.Index(string(out), m); i >= 0 {
			line, _, _ := strings.Cut(string(out[i+1:]), "\n")
			return strings.Trim(line, "[]"), nil
		}
	}
	return "", nil
}

// restore puts every changed path of the copy at dst back to its recorded
// state before the run, through an os.Root on dst: a path or a link that
// leads outside the copy is an error, never a host write. Removals go
// first, so a directory the run replaced by a file (or the reverse) ends
// as it was.
func restore(ctx context.Context, store *eventlog.Store, dst string, firsts map[string]string) error {
	root, err := os.OpenRoot(dst)
	if err != nil {
		return fmt.Errorf("replay: open the workspace copy: %w", err)
	}
	defer root.Close()
	paths := make([]string, 0, len(firsts))
	for p := range firsts {
		paths = append(paths, p)
	}
	slices.SortFunc(paths, func(a, b string) int {
		// Removals ("" before) first, then by path.
		if ra, rb := firsts[a] == "", firsts[b] == ""; ra != rb {
			if ra {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	for _, p := range paths {
		rel, err := localPath(p)
		if err != nil {
			return err
		}
		hash := firsts[p]
		if hash == "" {
			if err := removeIn(root, rel); err != nil {
				return fmt.Errorf("replay: restore %s: %w", p, err)
			}
			continue
		}
		b, err := store.GetBlob(ctx, hash)
		if err != nil {
			return fmt.Errorf("replay: restore %s: %w", p, err)
		}
		if err := writeIn(root, rel, b); err != nil {
			return fmt.Errorf("replay: restore %s: %w", p, err)
		}
	}
	return nil
}

// liveToolsCtx installs the workspace remap for a live-tools replay.
func liveToolsCtx(ctx context.Context, remap map[events.Placement]events.Placement) context.Context {
	return sandbox.WithRemap(ctx, remap)
}
