package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/internal/demo"
	"github.com/gorath/rath/keyring"
	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/signkey"
)

// defaultDir is the runtime directory when neither --dir nor RATH_DIR is set.
const defaultDir = "./.rath"

// app holds the global flags and the runtime of one invocation. The
// runtime is opened on first use, so commands that need none (version,
// help) touch no files.
type app struct {
	dir string
	// leaveTree has the runtime leave the Merkle tree over its commits
	// to a process that keeps running (rath.StoreOptions.LeaveTree): set
	// by commands that append and exit, such as submit.
	leaveTree bool
	// dsn, if set (--dsn, RATH_DSN), keeps the log in PostgreSQL; dir
	// then holds only what this process keeps for itself (the memory
	// index).
	dsn string
	// hmacKey keys the hash chain (RATH_HMAC_KEY). A store written with a
	// key must always be opened with it: the store refuses appends with
	// no key or another one (eventlog.KeyError), which would extend the
	// chain with links that never verify.
	hmacKey []byte
	// signingKey is the file of the key that signs checkpoints
	// (RATH_SIGNING_KEY); "" signs none. trustedKeys are note verifier
	// keys verify trusts to have signed them (verify --log-key).
	signingKey  string
	trustedKeys []string
	json        bool
	stdin       io.Reader
	stdout      io.Writer
	stderr      io.Writer
	rt          *rath.Runtime

	// kekFile is the key-encryption key's file (RATH_KEK_FILE, else the
	// config file's "kek_file"); "" stores content in clear.
	kekFile string

	// trustedWitnesses are the note verifier keys of the witnesses verify
	// and dossier trust (--witness-key).
	trustedWitnesses []string
	// setup is Config.Setup: it runs once on the runtime, when opened.
	setup func(context.Context, *rath.Runtime) error
	// sandboxes, if set, are the only backends the runtime can open (a
	// worker's --backends); nil means rath's built-ins.
	sandboxes *sandbox.Registry
	// ownsProcess is set when the command is all the process does
	// (Main, not Run inside another program): it may tune the process's
	// runtime and leave it so.
	ownsProcess bool
}

func newApp(cfg Config, stdin io.Reader, stdout, stderr io.Writer) *app {
	dir := defaultDir
	if env := os.Getenv("RATH_DIR"); env != "" {
		dir = env
	}
	a := &app{dir: dir, dsn: os.Getenv("RATH_DSN"), signingKey: os.Getenv("RATH_SIGNING_KEY"), kekFile: os.Getenv("RATH_KEK_FILE"), stdin: stdin, stdout: stdout, stderr: stderr, setup: cfg.Setup}
	if key := os.Getenv("RATH_HMAC_KEY"); key != "" {
		a.hmacKey = []byte(key)
	}
	return a
}

// dbPath is the database file of the runtime directory.
func (a *app) dbPath() string { return filepath.Join(a.dir, rath.DBFile) }

// target is the store's database: the DSN, or the runtime directory's
// database file.
func (a *app) target() string {
	if a.dsn != "" {
		return a.dsn
	}
	return a.dbPath()
}

// where names the store for messages, without a password.
func (a *app) where() string {
	if a.dsn != "" {
		return describeDSN(a.dsn)
	}
	return a.dir
}

// existing fails unless the runtime directory holds a database (or the
// DSN's database has rath's schema): reading commands must not create an
// empty store in the wrong place.
func (a *app) existing() error {
	if a.dsn != "" {
		return a.existingDSN()
	}
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
	stop := a.connecting(ctx)
	err := a.existing()
	stop()
	if err != nil {
		return nil, err
	}
	return a.create(ctx)
}

// create returns the runtime, creating the store if needed.
func (a *app) create(ctx context.Context) (*rath.Runtime, error) {
	if a.rt != nil {
		return a.rt, nil
	}
	if a.dsn != "" && !eventlog.IsPostgresDSN(a.dsn) {
		return nil, &usageError{err: fmt.Errorf("--dsn must be a postgres:// or postgresql:// URL (--dir selects the embedded store)"), hint: "rath --help"}
	}
	key, err := a.loadSigningKey()
	if err != nil {
		return nil, err
	}
	kek, err := a.loadKEK()
	if err != nil {
		return nil, err
	}
	stop := a.connecting(ctx)
	rt, err := rath.OpenWith(ctx, rath.Options{Dir: a.dir, DSN: a.dsn, HMACKey: a.hmacKey, Sandboxes: a.sandboxes, SigningKey: key, TrustedKeys: a.trustedKeys,
		TrustedWitnesses: a.trustedWitnesses, KEK: kek, Store: rath.StoreOptions{LeaveTree: a.leaveTree}})
	stop()
	if err != nil {
		return nil, err
	}
	// The demo is built from each run's parameters, here and in the
	// console and the workers this binary runs.
	rt.RegisterBuilder(demo.Name, buildDemo)
	if a.setup != nil {
		if err := a.setup(ctx, rt); err != nil {
			return nil, errors.Join(fmt.Errorf("setup: %w", err), rt.Close())
		}
	}
	a.rt = rt
	return rt, nil
}

// loadSigningKey loads the key of RATH_SIGNING_KEY, or returns nil when
// it is unset.
func (a *app) loadSigningKey() (*signkey.Key, error) {
	if a.signingKey == "" {
		return nil, nil
	}
	k, err := signkey.Load(a.signingKey)
	if err != nil {
		return nil, fmt.Errorf("RATH_SIGNING_KEY: %w", err)
	}
	return k, nil
}

// loadKEK loads the key-encryption key of RATH_KEK_FILE, else of the
// config file's "kek_file", or returns nil when neither names one.
func (a *app) loadKEK() (keyring.KEK, error) {
	path, from := a.kekFile, "RATH_KEK_FILE"
	if path == "" {
		cfgPath := flow.DefaultConfigPath(os.Getenv)
		cf, err := flow.LoadConfig(cfgPath)
		if err != nil {
			// A config file commands other than run never needed to
			// parse stops them only when it may name a KEK.
			if b, _ := os.ReadFile(cfgPath); !bytes.Contains(b, []byte(`"kek_file"`)) {
				return nil, nil
			}
			return nil, err
		}
		path, from = cf.KEKFile, "kek_file of "+cfgPath
	}
	if path == "" {
		return nil, nil
	}
	k, err := keyring.LoadKEKFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	return k, nil
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
