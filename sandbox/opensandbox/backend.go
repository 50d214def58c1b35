package opensandbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"time"

	"github.com/gorath/rath/sandbox"
)

// Defaults. A Backend field left at zero takes these values.
const (
	// Name is the backend's registry name.
	Name = "opensandbox"
	// DefaultDomain is the lifecycle server when neither Backend.Domain
	// nor OPEN_SANDBOX_DOMAIN is set.
	DefaultDomain = "localhost:8080"
	// DefaultImage is the image sandboxes are created from: OpenSandbox's
	// code interpreter, the image OpenRath uses.
	DefaultImage = "opensandbox/code-interpreter:v1.1.0"
	// DefaultWorkdir is the directory in the container used as the
	// workspace; it is created at Open.
	DefaultWorkdir = "/workspace"
	// DefaultLifetime is how long the server keeps a sandbox before it
	// expires it (the create request's timeout). The server's minimum is
	// one minute.
	DefaultLifetime = time.Hour
	// DefaultReadyTimeout bounds Open's wait for the sandbox to run and
	// for execd to answer.
	DefaultReadyTimeout = 60 * time.Second
	// DefaultMaxFrame is the largest stream frame the client decodes; a
	// longer one (one enormous output line) is counted and dropped.
	DefaultMaxFrame = 4 << 20
	// closeTimeout bounds the delete request Close sends.
	closeTimeout = 30 * time.Second
	// pollInterval spaces state and ping polls during Open, as the
	// official SDK does.
	pollInterval = 200 * time.Millisecond
)

// DefaultEntrypoint returns the DefaultImage's entrypoint. Other images
// get ["tail", "-f", "/dev/null"], the SDK's default, unless
// Backend.Entrypoint is set.
func DefaultEntrypoint() []string { return []string{"/opt/code-interpreter/code-interpreter.sh"} }

// DefaultResources returns the create request's default resourceLimits,
// which the server requires: the SDK's one CPU and 2 GiB.
func DefaultResources() map[string]string { return map[string]string{"cpu": "1", "memory": "2Gi"} }

// Backend creates sandboxes on an OpenSandbox server. The zero value
// reads OPEN_SANDBOX_DOMAIN and OPEN_SANDBOX_API_KEY at Open; set fields
// before the first Open and do not change them after. A Backend is safe
// for concurrent use.
type Backend struct {
	// Domain is the lifecycle server, "host:port" or a URL with a scheme.
	// Empty means $OPEN_SANDBOX_DOMAIN, then DefaultDomain.
	Domain string
	// APIKey is sent as OPEN-SANDBOX-API-KEY. Empty means
	// $OPEN_SANDBOX_API_KEY; no header is sent when both are empty.
	APIKey string
	// Protocol is the scheme for a Domain and for execd endpoints given
	// without one. Empty means "http".
	Protocol string
	// HTTPClient sends every request. Nil means a client without an
	// overall timeout (command streams last as long as the command);
	// calls are bounded by their contexts.
	HTTPClient *http.Client
	// Image is the default image. Empty means DefaultImage.
	Image string
	// Entrypoint overrides the container entrypoint.
	Entrypoint []string
	// Lifetime is the sandbox expiry requested at create. Zero means
	// DefaultLifetime.
	Lifetime time.Duration
	// Resources are the resourceLimits. Nil means DefaultResources().
	Resources map[string]string
	// Env is set in the container at create.
	Env map[string]string
	// Workdir is the workspace inside the container. Empty means
	// DefaultWorkdir.
	Workdir string
	// Timeout is the default per-command timeout. Zero means
	// sandbox.DefaultTimeout.
	Timeout time.Duration
	// MaxOutput is the default cap on kept stdout and stderr. Zero means
	// sandbox.DefaultMaxOutput.
	MaxOutput int
	// MaxReadBytes is the largest file ReadFile returns. Zero means
	// sandbox.DefaultMaxReadBytes.
	MaxReadBytes int64
	// MaxFrame is the largest command-stream frame decoded. Zero means
	// DefaultMaxFrame.
	MaxFrame int
	// ReadyTimeout bounds Open's wait for a running sandbox with a
	// responsive execd. Zero means DefaultReadyTimeout.
	ReadyTimeout time.Duration
}

var _ sandbox.Backend = (*Backend)(nil)

// Name returns "opensandbox".
func (b *Backend) Name() string { return Name }

// Capabilities: commands run in a container (isolated from the host, with
// network unless the server's policy says otherwise). Output arrives as
// lines, stdin is not supported, and symlinks are resolved by the server.
func (b *Backend) Capabilities() sandbox.Capabilities {
	return sandbox.Capabilities{Isolated: true, Network: true}
}

// Open creates a sandbox (or attaches to one, with the spec's id key),
// waits until it runs and execd answers, and creates the workspace
// directory. See parseSpec for the spec forms.
//
// Errors: ErrInvalidSpec; ErrUnavailable when the server cannot be
// reached; an *APIError for a refusal (401 for a bad key, 422 for a
// request the server rejects).
func (b *Backend) Open(ctx context.Context, specText string) (sandbox.Sandbox, error) {
	sp, err := parseSpec(specText)
	if err != nil {
		return nil, err
	}
	ready := b.ReadyTimeout
	if ready <= 0 {
		ready = DefaultReadyTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, ready)
	defer cancel()

	lc := b.lifecycle()
	var info sandboxInfo
	owned := sp.id == ""
	if owned {
		info, err = lc.create(ctx, b.createRequest(sp))
	} else {
		info, err = lc.get(ctx, sp.id)
	}
	if err != nil {
		return nil, unreachable(lc.base, err)
	}
	sb, err := b.connect(ctx, lc, info, sp)
	if err != nil && owned {
		// Do not leak a container the caller never got a handle to.
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer dcancel()
		if derr := lc.delete(dctx, info.ID); derr != nil {
			err = errors.Join(err, derr)
		}
	}
	if err != nil {
		return nil, err
	}
	sb.owned = owned
	return sb, nil
}

// connect waits for the sandbox to run, resolves execd and prepares the
// workspace.
func (b *Backend) connect(ctx context.Context, lc *lifecycle, info sandboxInfo, sp spec) (*Sandbox, error) {
	for info.Status.State != StateRunning {
		switch info.Status.State {
		case StateFailed, StateTerminated:
			return nil, fmt.Errorf("%w: sandbox %s is %s: %s %s", sandbox.ErrUnavailable, info.ID, info.Status.State, info.Status.Reason, info.Status.Message)
		}
		if err := sleep(ctx, pollInterval); err != nil {
			return nil, fmt.Errorf("wait for sandbox %s to run (state %s): %w", info.ID, info.Status.State, err)
		}
		var err error
		if info, err = lc.get(ctx, info.ID); err != nil {
			return nil, err
		}
	}
	ep, err := lc.endpoint(ctx, info.ID, ExecdPort)
	if err != nil {
		return nil, err
	}
	ex := &execd{service{http: lc.http, base: baseURL(b.protocol(), ep.Endpoint), headers: maps.Clone(ep.Headers)}}
	// execd starts with the container; the SDK polls it the same way.
	for {
		err := ex.ping(ctx)
		if err == nil {
			break
		}
		if serr := sleep(ctx, pollInterval); serr != nil {
			return nil, fmt.Errorf("%w: execd of sandbox %s does not answer: %v", sandbox.ErrUnavailable, info.ID, err)
		}
	}
	workdir := sp.workdir
	if workdir == "" {
		workdir = b.Workdir
	}
	if workdir == "" {
		workdir = DefaultWorkdir
	}
	// execd refuses a command whose cwd does not exist.
	if err := ex.mkdirAll(ctx, workdir, 755); err != nil {
		return nil, fmt.Errorf("create workspace %s: %w", workdir, err)
	}
	return newSandbox(info.ID, workdir, ex, lc, b), nil
}

func (b *Backend) protocol() string {
	if b.Protocol == "" {
		return "http"
	}
	return b.Protocol
}

func (b *Backend) lifecycle() *lifecycle {
	domain := b.Domain
	if domain == "" {
		domain = os.Getenv("OPEN_SANDBOX_DOMAIN")
	}
	if domain == "" {
		domain = DefaultDomain
	}
	key := b.APIKey
	if key == "" {
		key = os.Getenv("OPEN_SANDBOX_API_KEY")
	}
	headers := map[string]string{}
	if key != "" {
		headers["OPEN-SANDBOX-API-KEY"] = key
	}
	client := b.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	return &lifecycle{service{http: client, base: baseURL(b.protocol(), domain) + "/v1", headers: headers}}
}

func (b *Backend) createRequest(sp spec) createRequest {
	image, entry := b.Image, b.Entrypoint
	if sp.image != "" {
		image = sp.image
	}
	if image == "" {
		image = DefaultImage
	}
	if entry == nil {
		entry = []string{"tail", "-f", "/dev/null"}
		if image == DefaultImage {
			entry = DefaultEntrypoint()
		}
	}
	lifetime := b.Lifetime
	if sp.lifetime != 0 {
		lifetime = sp.lifetime
	}
	if lifetime == 0 {
		lifetime = DefaultLifetime
	}
	res := maps.Clone(b.Resources)
	if res == nil {
		res = DefaultResources()
	}
	if sp.cpu != "" {
		res["cpu"] = sp.cpu
	}
	if sp.memory != "" {
		res["memory"] = sp.memory
	}
	return createRequest{
		Image:          imageSpec{URI: image},
		Entrypoint:     entry,
		Timeout:        int(lifetime / time.Second),
		ResourceLimits: res,
		Env:            b.Env,
		Metadata:       map[string]string{"created-by": "rath"},
	}
}

// unreachable marks transport failures (no server there) as
// ErrUnavailable; HTTP refusals keep their *APIError.
func unreachable(base string, err error) error {
	var apiErr *APIError
	if errors.As(err, &apiErr) || errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("%w: OpenSandbox server at %s: %v", sandbox.ErrUnavailable, base, err)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
