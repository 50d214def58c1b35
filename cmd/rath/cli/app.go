package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gorath/rath"
)

// defaultDir is the runtime directory when neither --dir nor RATH_DIR is set.
const defaultDir = "./.rath"

// app holds the global flags and the runtime of one invocation. The
// runtime is opened on first use, so commands that need none (version,
// help) touch no files.
type app struct {
	dir string
	// hmacKey keys the hash chain (RATH_HMAC_KEY). A store written with a
	// key must always be opened with it: the store refuses appends with
	// no key or another one (events.KeyError), which would extend the
	// chain with links that never verify.
	hmacKey []byte
	json    bool
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
	rt      *rath.Runtime
	// setup is Config.Setup: it runs once on the runtime, when opened.
	setup func(context.Context, *rath.Runtime) error
}

func newApp(cfg Config, stdin io.Reader, stdout, stderr io.Writer) *app {
	dir := defaultDir
	if env := os.Getenv("RATH_DIR"); env != "" {
		dir = env
	}
	a := &app{dir: dir, stdin: stdin, stdout: stdout, stderr: stderr, setup: cfg.Setup}
	if key := os.Getenv("RATH_HMAC_KEY"); key != "" {
		a.hmacKey = []byte(key)
	}
	return a
}

// dbPath is the database file of the runtime directory.
func (a *app) dbPath() string { return filepath.Join(a.dir, rath.DBFile) }

// existing fails unless the runtime directory holds a database: reading
// commands must not create an empty store in the wrong directory.
func (a *app) existing() error {
	_, err := os.Stat(a.dbPath())
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no rath store in %s (set --dir or RATH_DIR; \"rath new\" or \"rath import\" creates one)", a.dir)
	}
	return err
}

// open returns the runtime of an existing store.
func (a *app) open(ctx context.Context) (*rath.Runtime, error) {
	if a.rt != nil {
		return a.rt, nil
	}
	if err := a.existing(); err != nil {
		return nil, err
	}
	return a.create(ctx)
}

// create returns the runtime, creating the store if needed.
func (a *app) create(ctx context.Context) (*rath.Runtime, error) {
	if a.rt != nil {
		return a.rt, nil
	}
	rt, err := rath.OpenWith(ctx, rath.Options{Dir: a.dir, HMACKey: a.hmacKey})
	if err != nil {
		return nil, err
	}
	if a.setup != nil {
		if err := a.setup(ctx, rt); err != nil {
			return nil, errors.Join(fmt.Errorf("setup: %w", err), rt.Close())
		}
	}
	a.rt = rt
	return rt, nil
}

func (a *app) close() error {
	if a.rt == nil {
		return nil
	}
	err := a.rt.Close()
	a.rt = nil
	return err
}

// printJSON writes v as indented JSON on stdout.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
