package opensandbox

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// ExecdPort is the container port of the execd daemon OpenSandbox injects
// into every sandbox.
const ExecdPort = 44772

// Sandbox states reported by the lifecycle server. Others exist (Pausing,
// Paused, Resuming, Stopping, Unknown); the client waits through them.
const (
	StatePending    = "Pending"
	StateRunning    = "Running"
	StateTerminated = "Terminated"
	StateFailed     = "Failed"
)

type imageSpec struct {
	URI string `json:"uri"`
}

// createRequest is the subset of CreateSandboxRequest the client sends.
type createRequest struct {
	Image          imageSpec         `json:"image"`
	Entrypoint     []string          `json:"entrypoint"`
	Timeout        int               `json:"timeout,omitempty"` // seconds, >= 60
	ResourceLimits map[string]string `json:"resourceLimits"`
	Env            map[string]string `json:"env,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
}

type status struct {
	State   string `json:"state"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// sandboxInfo is the Sandbox object of the lifecycle API.
type sandboxInfo struct {
	ID        string    `json:"id"`
	Status    status    `json:"status"`
	ExpiresAt time.Time `json:"expiresAt"`
	CreatedAt time.Time `json:"createdAt"`
}

type endpoint struct {
	Endpoint string            `json:"endpoint"`
	Headers  map[string]string `json:"headers"`
}

// lifecycle is the client of the lifecycle server's /v1 API.
type lifecycle struct{ service }

func (l *lifecycle) create(ctx context.Context, req createRequest) (sandboxInfo, error) {
	var info sandboxInfo
	if err := l.do(ctx, http.MethodPost, "/sandboxes", nil, req, &info); err != nil {
		return info, fmt.Errorf("create sandbox: %w", err)
	}
	if info.ID == "" {
		return info, fmt.Errorf("create sandbox: the server returned no id")
	}
	return info, nil
}

func (l *lifecycle) get(ctx context.Context, id string) (sandboxInfo, error) {
	var info sandboxInfo
	if err := l.do(ctx, http.MethodGet, "/sandboxes/"+url.PathEscape(id), nil, nil, &info); err != nil {
		return info, fmt.Errorf("get sandbox %s: %w", id, err)
	}
	return info, nil
}

func (l *lifecycle) delete(ctx context.Context, id string) error {
	if err := l.do(ctx, http.MethodDelete, "/sandboxes/"+url.PathEscape(id), nil, nil, nil); err != nil {
		return fmt.Errorf("delete sandbox %s: %w", id, err)
	}
	return nil
}

func (l *lifecycle) endpoint(ctx context.Context, id string, port int) (endpoint, error) {
	var ep endpoint
	path := fmt.Sprintf("/sandboxes/%s/endpoints/%d", url.PathEscape(id), port)
	if err := l.do(ctx, http.MethodGet, path, nil, nil, &ep); err != nil {
		return ep, fmt.Errorf("resolve sandbox %s port %d: %w", id, port, err)
	}
	if ep.Endpoint == "" {
		return ep, fmt.Errorf("resolve sandbox %s port %d: empty endpoint", id, port)
	}
	return ep, nil
}
