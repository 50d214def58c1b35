// Package rath is the entry point of the rath runtime: Open wires the event
// log, the projections and the session manager over one embedded SQLite
// database, and Runtime creates and loads sessions.
//
// A Session is the value that flows through a rath program; see package
// session for its semantics and package events for the log beneath it.
package rath

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/gorath/rath/checkpoint"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/mcptool"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/internal/scratchopt"
	"github.com/gorath/rath/keyring"
	"github.com/gorath/rath/memory"
	"github.com/gorath/rath/migrations"
	"github.com/gorath/rath/projections"
	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/secret"
	"github.com/gorath/rath/session"
	"github.com/gorath/rath/signkey"
	"github.com/gorath/rath/telemetry"
)

// DBFile is the database file name inside a runtime directory.
const DBFile = "rath.db"

// Options configure a Runtime.
type Options struct {
	// Dir holds the database (Dir/rath.db) and anything else the runtime
	// keeps on disk. It is created if missing. Required: there is no
	// default.
	Dir string
	// DSN, if set, keeps the event log in the PostgreSQL database it names
	// (postgres://…) instead of Dir/rath.db; many processes on many
	// machines can share it. Dir is still required: it holds what each
	// process keeps for itself, such as the memory index. Empty (the
	// default) means SQLite at Dir/rath.db.
	DSN string
	// HMACKey keys the event hash chain (see eventlog.Options.HMACKey). Nil
	// (the default) means an unkeyed SHA-256 chain.
	HMACKey []byte
	// Sandboxes are the backends sessions can be placed on. Nil means the
	// built-ins: local, bwrap and opensandbox.
	Sandboxes *sandbox.Registry
	// Models are the model vendors providers are built from. Nil means
	// the built-ins (Models): openai, anthropic and scripted.
	Models *model.Registry
	// Memory configures the local memory, opened on first use of
	// Runtime.Memory at Dir/memory.bleve. The zero value is memory's
	// defaults.
	Memory memory.LocalOptions
	// MemoryBackend selects the backend Runtime.MemoryBackend opens (the
	// config file's "memory" entry). The zero value means the local
	// memory.
	MemoryBackend memory.BackendConfig
	// MemoryBackends are the memory backends a config can name. Nil means
	// the built-ins (MemoryBackends): local and openviking.
	MemoryBackends *memory.Registry
	// Projectors are extra read models run in every append's transaction,
	// after the built-in SQL projections. Nil means none.
	Projectors []eventlog.Projector
	// Telemetry exports the runs made while the runtime is open as
	// OpenTelemetry spans and metrics, when the standard
	// OTEL_EXPORTER_OTLP_* variables name an endpoint (see package
	// telemetry); Close flushes. False (the default), or with no endpoint
	// set, nothing is started.
	Telemetry bool
	// Secrets are redacted from every payload and blob before it is
	// written (see package secret). Nil means DefaultSecrets: the HMAC
	// key, credential-like environment variables and the keys of the
	// config file. Add more with Runtime.Secrets. The password of DSN is
	// added to it either way (secret.FromDSN).
	Secrets *secret.Redactor
	// SigningKey, if set, signs checkpoints of the log's Merkle tree as
	// this runtime appends (package checkpoint): every Checkpoints.Every
	// events, every Checkpoints.Interval, at the end of each run and on
	// Close. The CLI loads it from the file $RATH_SIGNING_KEY names. Nil
	// (the default) signs none. Its private key, in every form of signkey.Key.Forms, is
	// redacted like Secrets: a local tool can read the key's file.
	SigningKey *signkey.Key
	// KEK, if set, is the key-encryption key that wraps each subject's
	// data key (package keyring): content is sealed under the key of its
	// subject before it is hashed and stored, and erasing a subject
	// deletes its key. The CLI loads it from the file $RATH_KEK_FILE (or
	// the config file's "kek_file") names. Nil (the default) stores
	// content in clear; a store that holds sealed content then refuses
	// to open (a *keyring.KEKError), as it does with another KEK.
	KEK keyring.KEK
	// Checkpoints tune the signing of checkpoints; the zero value is
	// checkpoint's defaults (1,000 events, 10 s).
	Checkpoints checkpoint.SignerOptions
	// TrustedKeys are the note verifier keys trusted to sign the log's
	// checkpoints: Verify fails on a checkpoint signed by any other.
	// Empty (the default) means each checkpoint is checked against the
	// key recorded with it, which shows the store consistent with itself
	// only.
	TrustedKeys []string
	// TrustedWitnesses are the note verifier keys of the witnesses the
	// auditor trusts: Verify fails unless one of them cosigned a
	// checkpoint. Empty (the default) pins none, and the summary says so.
	TrustedWitnesses []string
	// Clock stamps events. Nil means time.Now.
	Clock func() time.Time
	// Entropy draws run ids and seeds. Nil means crypto/rand.
	Entropy io.Reader
	// Store tunes the event store; the zero value is right for most
	// programs.
	Store StoreOptions

	// Scratch makes the leaner store of a replay's scratch runtime
	// (package replay); its type is internal to this module. The zero
	// value is a normal store.
	Scratch scratchopt.Options
}

// StoreOptions tune the event store under a runtime. The zero value is
// the defaults stated on each field.
type StoreOptions struct {
	// InMemory keeps the database in memory (Dir is still created for
	// other files): for throwaway runtimes. Nothing survives Close. False
	// (the default) keeps it at Dir/rath.db. It excludes Options.DSN.
	InMemory bool
	// Synchronous is the SQLite synchronous mode: "FULL" (the default,
	// also for empty), "NORMAL" or "OFF" (see eventlog.Options.Synchronous).
	Synchronous string
	// BusyTimeout is how long a write waits for another connection's
	// write lock (see eventlog.Options.BusyTimeout). Zero means
	// eventlog.DefaultBusyTimeout.
	BusyTimeout time.Duration
	// ReadMmapBytes is how much of the SQLite database each read
	// connection maps into memory; zero means the default, negative none
	// (see eventlog.Options.ReadMmapBytes for the trade-off).
	ReadMmapBytes int64
	// ChunkCacheBytes bounds the chunks kept in memory for sessions read
	// in this process, so reading one again, at its head or at a past
	// seq, reads only what was stored since (see session.WithChunkCache).
	// Zero means session.DefaultChunkCacheBytes; negative keeps none.
	ChunkCacheBytes int64
	// LeaveTree, on PostgreSQL, leaves the Merkle tree over this
	// runtime's commits to the next process that builds it, and opens no
	// connection for the tree until this runtime reads it (see
	// eventlog.Options.LeaveTree): for a process that appends and exits,
	// such as "rath submit". False (the default) builds the tree over this
	// runtime's commits after them and at Close.
	LeaveTree bool
}

// Runtime is an open rath store. It is safe for concurrent use.
type Runtime struct {
	dir      string
	store    *eventlog.Store
	reader   *projections.Reader
	sessions *session.Manager
	entropy  io.Reader
	wfs      workflows
	pool     *sandbox.Pool
	mcp      *mcptool.Manager
	secrets  *secret.Redactor
	keeper   *sql.DB // holds an in-memory database open; nil for a file
	memOpts  memory.LocalOptions
	models   *model.Registry

	memMu sync.Mutex // protects mem
	mem   *memory.Local

	memCfg      memory.BackendConfig
	memBackends *memory.Registry
	backendsMu  sync.Mutex               // protects opened
	opened      map[string]memory.Memory // by config, as JSON

	otel *telemetry.Live // nil unless Options.Telemetry found an endpoint

	signer      *checkpoint.Signer // nil without Options.SigningKey
	trustedKeys []string
	witnesses   []string // Options.TrustedWitnesses

	keys *keyring.Keyring // nil without Options.KEK
}

// Open opens (creating if needed) the runtime in dir, applying any pending
// schema migrations.
func Open(ctx context.Context, dir string) (*Runtime, error) {
	return OpenWith(ctx, Options{Dir: dir})
}

// OpenWith opens the runtime with options.
func OpenWith(ctx context.Context, opts Options) (*Runtime, error) {
	if opts.Dir == "" {
		return nil, errors.New("rath: open: a directory is required")
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("rath: open: %w", err)
	}
	path := filepath.Join(opts.Dir, DBFile)
	var keeper, readPool *sql.DB
	if opts.Scratch.WithoutReadIndexes && !opts.Store.InMemory {
		return nil, errors.New("rath: open: WithoutReadIndexes is for in-memory stores only")
	}
	if opts.Scratch.WithoutTree && !opts.Store.InMemory {
		return nil, errors.New("rath: open: WithoutTree is for in-memory stores only")
	}
	if opts.DSN != "" {
		if opts.Store.InMemory {
			return nil, errors.New("rath: open: Store.InMemory and DSN exclude each other")
		}
		// The schema is checked through the pool that then serves the
		// store's reads: one connection, not one each.
		var err error
		if readPool, err = eventlog.OpenPostgresReadPool(opts.DSN); err != nil {
			return nil, fmt.Errorf("rath: open: %w", err)
		}
		if err := migrateDB(ctx, readPool, opts.DSN); err != nil {
			readPool.Close()
			return nil, err
		}
	} else if opts.Store.InMemory {
		// The in-memory database lives while a connection is open: keep
		// one for the runtime's life, and migrate through it.
		path = "rath-" + hex.EncodeToString(randomBytes(opts.Entropy, 12))
		var err error
		if keeper, err = migrations.OpenInMemory(ctx, eventlog.DSN(path, true, "busy_timeout(10000)")); err != nil {
			return nil, fmt.Errorf("rath: open in-memory store: %w", err)
		}
		if opts.Scratch.WithoutReadIndexes {
			if err := migrations.DropReadIndexes(ctx, keeper); err != nil {
				keeper.Close()
				return nil, fmt.Errorf("rath: open in-memory store: %w", err)
			}
		}
	} else if err := Migrate(ctx, path); err != nil {
		return nil, err
	}
	secrets := opts.Secrets
	if secrets == nil {
		secrets = secret.New(DefaultSecrets(opts.HMACKey)...)
	}
	// The store's own password, given in any way: a local tool can read
	// rath's environment and command line (/proc/$PPID).
	for _, s := range secret.FromDSN("dsn", opts.DSN) {
		secrets.Add(s.Name, s.Value)
	}
	var signer *checkpoint.Signer
	var afterCommit func(eventlog.Commit)
	if opts.SigningKey != nil {
		// A local tool can read the key's file as this process's user.
		for _, f := range opts.SigningKey.Forms() {
			secrets.Add("RATH_SIGNING_KEY", f)
		}
		signer = checkpoint.NewSigner(opts.SigningKey, opts.Checkpoints)
		afterCommit = signer.Committed
	}
	// One keyring for the store's sealing and the runtime's erasures: an
	// erasure empties the cache the reads use.
	var keys *keyring.Keyring
	var sealer eventlog.Sealer
	if opts.KEK != nil {
		rebind := func(q string) string { return q }
		if opts.DSN != "" {
			rebind = func(q string) string { return sqlx.Rebind(sqlx.DOLLAR, q) }
		}
		keys = keyring.New(opts.KEK, rebind)
		sealer = keys
	}
	store, err := eventlog.Open(ctx, eventlog.Options{
		Sealer:           sealer,
		AfterCommit:      afterCommit,
		Redactor:         secrets,
		InMemory:         opts.Store.InMemory,
		WithoutTree:      opts.Scratch.WithoutTree,
		DiscardBlobs:     opts.Scratch.DiscardBlobs,
		Path:             path,
		DSN:              opts.DSN,
		PostgresReadPool: readPool,
		HMACKey:          opts.HMACKey,
		Synchronous:      opts.Store.Synchronous,
		ReadMmapBytes:    opts.Store.ReadMmapBytes,
		Clock:            opts.Clock,
		BusyTimeout:      opts.Store.BusyTimeout,
		LeaveTree:        opts.Store.LeaveTree,
		Projectors:       append([]eventlog.Projector{projections.Projector{}}, opts.Projectors...),
	})
	if err != nil {
		if keeper != nil {
			keeper.Close()
		}
		return nil, fmt.Errorf("rath: open: %w", err)
	}
	// A store whose content is sealed is not written in clear beside it,
	// nor read as if it were lost: without its KEK it does not open.
	if err := keyring.CheckKEK(ctx, store.DB(), store.DB().Rebind, opts.KEK); err != nil {
		store.Close()
		if keeper != nil {
			keeper.Close()
		}
		return nil, fmt.Errorf("rath: open: %w", err)
	}
	reader := projections.NewReader(store.DB()).WithOpener(store)
	models := opts.Models
	if models == nil {
		models = Models()
	}
	reg := opts.Sandboxes
	if reg == nil {
		reg, _ = BuiltinSandboxes() // all three: no unknown name
	}
	check := func(name string) error {
		_, err := reg.Lookup(name)
		return err
	}
	entropy := opts.Entropy
	if entropy == nil {
		entropy = rand.Reader
	}
	if signer != nil {
		if err := signer.Start(ctx, store); err != nil {
			store.Close()
			if keeper != nil {
				keeper.Close()
			}
			return nil, fmt.Errorf("rath: open: %w", err)
		}
	}
	guard, err := storeGuard(opts.Dir)
	if err != nil {
		if signer != nil {
			signer.Close()
		}
		store.Close()
		if keeper != nil {
			keeper.Close()
		}
		return nil, err
	}
	// Ids made outside a run derive from a seed of this runtime's own, so
	// they differ between stores and between processes on one store.
	local := session.WithLocalSeed("local-" + hex.EncodeToString(randomBytes(entropy, 16)))
	cacheBytes := opts.Store.ChunkCacheBytes
	if cacheBytes == 0 {
		cacheBytes = session.DefaultChunkCacheBytes
	}
	sessions := session.NewManager(store, reader, session.WithBackendCheck(check), session.WithPlacementCheck(guard), local, session.WithChunkCache(cacheBytes))
	rt := &Runtime{dir: opts.Dir, store: store, reader: reader, sessions: sessions,
		entropy: entropy, models: models, wfs: workflows{m: map[string]flow.Workflow{}, b: map[string]Builder{}}, pool: sandbox.NewPool(reg, sandbox.WithPlacementCheck(placementGuard(guard))),
		mcp: mcptool.NewManager(), secrets: secrets, keeper: keeper, memOpts: opts.Memory,
		memCfg: opts.MemoryBackend, memBackends: opts.MemoryBackends, signer: signer, trustedKeys: opts.TrustedKeys,
		witnesses: opts.TrustedWitnesses, keys: keys}
	if rt.memBackends == nil {
		rt.memBackends = MemoryBackends()
	}
	if opts.Telemetry {
		if rt.otel, err = telemetry.StartFromEnv(ctx, store); err != nil {
			return nil, errors.Join(fmt.Errorf("rath: open: %w", err), rt.Close())
		}
	}
	return rt, nil
}

// Close closes the open sandboxes, stops the writer and closes the
// database. Cleanup runs even if called with appends in flight; those fail
// with eventlog.ErrClosed.
func (rt *Runtime) Close() error {
	var err error
	rt.memMu.Lock()
	if rt.mem != nil {
		err = rt.mem.Close()
		rt.mem = nil
	}
	rt.memMu.Unlock()
	// The exporter reads the store until it has caught up: before it closes.
	err = errors.Join(err, rt.otel.Close(context.Background()), rt.mcp.Close(), rt.pool.Close())
	// The signer signs the last head the runtime wrote: before the store
	// closes, after everything that appends.
	if rt.signer != nil {
		err = errors.Join(err, rt.signer.Close())
	}
	err = errors.Join(err, rt.store.Close())
	if rt.keeper != nil {
		err = errors.Join(err, rt.keeper.Close())
	}
	return err
}

// randomBytes draws n bytes from r, or crypto/rand when r is nil.
func randomBytes(r io.Reader, n int) []byte {
	if r == nil {
		r = rand.Reader
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		panic(fmt.Sprintf("rath: entropy: %v", err))
	}
	return b
}

// MemoryDir is the memory index directory inside a runtime directory.
const MemoryDir = "memory.bleve"

// Memory returns the runtime's local memory, opening it on first use: its
// events are in the runtime's log and its BM25 index in Dir/memory.bleve,
// caught up from its checkpoint (or rebuilt, with a warning, if missing or
// damaged). It persists across runs. An in-memory runtime has none.
func (rt *Runtime) Memory(ctx context.Context) (*memory.Local, error) {
	rt.memMu.Lock()
	defer rt.memMu.Unlock()
	if rt.mem != nil {
		return rt.mem, nil
	}
	if rt.keeper != nil {
		return nil, errors.New("rath: an in-memory runtime has no local memory")
	}
	m, err := memory.OpenLocal(ctx, rt.store, filepath.Join(rt.dir, MemoryDir), rt.memOpts)
	if err != nil {
		return nil, fmt.Errorf("rath: open memory: %w", err)
	}
	rt.mem = m
	return m, nil
}

// MCP returns the runtime's MCP servers: connect them with Connect or
// ConnectConfig and wrap their tools with Tools. Each keeps one long-lived
// connection, closed by Close.
func (rt *Runtime) MCP() *mcptool.Manager { return rt.mcp }

// Sandboxes returns the pool of open sandboxes: a sandbox opens on first
// use and is shared by every session placed on the same backend and spec.
func (rt *Runtime) Sandboxes() *sandbox.Pool { return rt.pool }

// Sandbox returns the sandbox of the session's placement, opening it if
// needed.
func (rt *Runtime) Sandbox(ctx context.Context, s *session.Session) (sandbox.Sandbox, error) {
	return rt.pool.Get(ctx, s.Placement())
}

// Secrets returns the values redacted from everything the runtime writes;
// add a secret it cannot know (a key passed in code) before it can leak.
func (rt *Runtime) Secrets() *secret.Redactor { return rt.secrets }

// Dir returns the runtime directory.
func (rt *Runtime) Dir() string { return rt.dir }

// Store returns the event log.
func (rt *Runtime) Store() *eventlog.Store { return rt.store }

// Reader returns the SQL read model.
func (rt *Runtime) Reader() *projections.Reader { return rt.reader }

// Sessions returns the session manager.
func (rt *Runtime) Sessions() *session.Manager { return rt.sessions }

// NewUserSession creates a root session holding one user message. A
// known secret in text is redacted from the session too, not only from
// the log, so the requests built from it are the ones a replay rebuilds.
func (rt *Runtime) NewUserSession(ctx context.Context, text string) (*session.Session, error) {
	return rt.sessions.New(ctx, session.OriginUser, session.Chunk{Role: events.RoleUser, Content: rt.secrets.String(text)})
}

// NewAgentSession creates a root session holding an agent's system prompt
// (redacted as NewUserSession's text is).
func (rt *Runtime) NewAgentSession(ctx context.Context, prompt string) (*session.Session, error) {
	return rt.sessions.New(ctx, session.OriginAgentPrompt, session.Chunk{Role: events.RoleSystem, Content: rt.secrets.String(prompt)})
}

// NewSession creates an empty root session.
func (rt *Runtime) NewSession(ctx context.Context) (*session.Session, error) {
	return rt.sessions.New(ctx, session.OriginEmpty)
}

// Session loads the head of a session (session.ErrNotFound if unknown).
func (rt *Runtime) Session(ctx context.Context, id string) (*session.Session, error) {
	return rt.sessions.Load(ctx, id)
}

// SessionAt loads a session as it was right after the event at seq.
func (rt *Runtime) SessionAt(ctx context.Context, id string, seq int64) (*session.Session, error) {
	return rt.sessions.LoadAt(ctx, id, seq)
}
