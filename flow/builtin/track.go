package builtin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/sandbox"
)

// snapshot is the content of a workspace's trackable files at one moment.
type snapshot struct {
	files map[string]tracked // path -> content
	big   map[string]bigFile // too large to track: only size and time
	off   string             // why nothing is tracked; "" when tracking works
}

type tracked struct {
	hash string
	data []byte
}

type bigFile struct {
	size    int64
	modTime time.Time
}

// excluded reports paths never tracked: git's internals change on every
// git command and are no diff a reader wants.
func excluded(path string) bool {
	return path == ".git" || strings.HasPrefix(path, ".git/")
}

// take reads the workspace's regular files within the bounds. It never
// fails: a problem turns tracking off for this call, with the reason.
func (t Tracking) take(ctx context.Context, sb sandbox.Sandbox) snapshot {
	if t.Off {
		return snapshot{off: "tracking disabled"}
	}
	regular, over, err := t.regularFiles(ctx, sb)
	if err != nil {
		return snapshot{off: fmt.Sprintf("listing the workspace failed: %v", err)}
	}
	if over {
		return snapshot{off: fmt.Sprintf("the workspace has more than the %d files tracked; tracking is off for this command", t.MaxFiles)}
	}
	snap := snapshot{files: make(map[string]tracked, len(regular)), big: map[string]bigFile{}}
	var total int64
	for _, e := range regular {
		if e.Size > t.MaxFileBytes {
			snap.big[e.Path] = bigFile{size: e.Size, modTime: e.ModTime}
			continue
		}
		data, err := sb.ReadFile(ctx, e.Path)
		switch {
		case errors.Is(err, sandbox.ErrTooLarge):
			snap.big[e.Path] = bigFile{size: e.Size, modTime: e.ModTime}
			continue
		case ctx.Err() != nil:
			return snapshot{off: fmt.Sprintf("interrupted: %v", ctx.Err())}
		case err != nil:
			// Gone since the listing, or unreadable: not part of the
			// snapshot, which is what a later reader would see too.
			continue
		}
		if int64(len(data)) > t.MaxFileBytes {
			// It grew since the listing.
			snap.big[e.Path] = bigFile{size: int64(len(data)), modTime: e.ModTime}
			continue
		}
		total += int64(len(data))
		if total > t.MaxBytes {
			return snapshot{off: fmt.Sprintf("the workspace's files add up to more than the %d bytes tracked", t.MaxBytes)}
		}
		snap.files[e.Path] = tracked{hash: sandbox.Hash(data), data: data}
	}
	return snap
}

// regularFiles returns the workspace's trackable files, or over when there
// are more than MaxFiles. A sandbox that can walk (sandbox.Walker) is read
// only up to the first file past the cap: a workspace of 300,000 files
// used to be listed whole before every command (seconds and hundreds of
// MB each time) only to find that it is not tracked. .git is not entered.
func (t Tracking) regularFiles(ctx context.Context, sb sandbox.Sandbox) (regular []sandbox.FileInfo, over bool, err error) {
	w, ok := sb.(sandbox.Walker)
	if !ok {
		entries, err := sb.List(ctx, ".", true)
		if err != nil {
			return nil, false, err
		}
		for _, e := range entries {
			if e.Mode.IsRegular() && !excluded(e.Path) {
				regular = append(regular, e)
			}
		}
		return regular, len(regular) > t.MaxFiles, nil
	}
	err = w.Walk(ctx, ".", func(e sandbox.FileInfo) error {
		switch {
		case excluded(e.Path):
			if e.Mode.IsDir() {
				return fs.SkipDir
			}
		case e.Mode.IsRegular():
			if len(regular) == t.MaxFiles {
				over = true
				return fs.SkipAll
			}
			regular = append(regular, e)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return regular, over, nil
}

// changes is what a command did to the workspace.
type changes struct {
	files []events.FileChange
	blobs [][]byte
	// untracked names files that changed but are too large to record.
	untracked []string
	off       string
}

// diff compares two snapshots: created, modified and deleted files, with
// their contents before and after as blobs (each distinct content once).
func diff(before, after snapshot) changes {
	if before.off != "" {
		return changes{off: before.off}
	}
	if after.off != "" {
		return changes{off: after.off}
	}
	var c changes
	seen := map[string]bool{}
	blob := func(t tracked) string {
		if !seen[t.hash] {
			seen[t.hash] = true
			c.blobs = append(c.blobs, t.data)
		}
		return t.hash
	}
	paths := slices.Sorted(maps.Keys(before.files))
	for p := range after.files {
		if _, ok := before.files[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	for _, p := range paths {
		b, inBefore := before.files[p]
		a, inAfter := after.files[p]
		switch {
		case inBefore && inAfter && a.hash == b.hash:
		case inBefore && inAfter:
			c.files = append(c.files, events.FileChange{Path: p, Before: blob(b), After: blob(a)})
		case inBefore:
			if _, grew := after.big[p]; grew {
				c.untracked = append(c.untracked, p)
				continue
			}
			c.files = append(c.files, events.FileChange{Path: p, Before: blob(b)})
		default:
			if _, shrank := before.big[p]; shrank {
				c.untracked = append(c.untracked, p)
				continue
			}
			c.files = append(c.files, events.FileChange{Path: p, After: blob(a)})
		}
	}
	for p, b := range before.big {
		a, ok := after.big[p]
		_, nowSmall := after.files[p]
		if !nowSmall && (!ok || a.size != b.size || !a.modTime.Equal(b.modTime)) {
			c.untracked = append(c.untracked, p)
		}
	}
	for p := range after.big {
		_, wasBig := before.big[p]
		_, wasSmall := before.files[p]
		if !wasBig && !wasSmall {
			c.untracked = append(c.untracked, p)
		}
	}
	slices.Sort(c.untracked)
	return c
}

// summary is the line or two the model reads about the changes.
func (c changes) summary(t Tracking) string {
	var b strings.Builder
	if c.off != "" && c.off != "tracking disabled" {
		fmt.Fprintf(&b, "\n[file changes not tracked: %s]", c.off)
	}
	if len(c.files) > 0 {
		parts := make([]string, len(c.files))
		for i, f := range c.files {
			switch {
			case f.Before == "":
				parts[i] = f.Path + " (created)"
			case f.After == "":
				parts[i] = f.Path + " (deleted)"
			default:
				parts[i] = f.Path + " (modified)"
			}
		}
		fmt.Fprintf(&b, "\n[files changed: %s]", strings.Join(parts, ", "))
	}
	if len(c.untracked) > 0 {
		fmt.Fprintf(&b, "\n[changed but not recorded, larger than the %d bytes tracked: %s]", t.MaxFileBytes, strings.Join(c.untracked, ", "))
	}
	return b.String()
}
