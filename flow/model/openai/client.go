package openai

import (
	"context"
	"net/http"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/gorath/rath/flow/model"
)

// Provider is the Provider field of the errors this client returns.
const Provider = "openai"

// DefaultBaseURL is used when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config configures a Client.
type Config struct {
	// BaseURL is the API root including the version, like
	// "http://localhost:8000/v1". Empty means DefaultBaseURL.
	BaseURL string
	// APIKey is sent as a bearer token; empty sends no Authorization
	// header (local servers).
	APIKey string
	// Model is used when a Request names none.
	Model string
	// HTTPClient, if set, is used for the calls (its Timeout becomes a
	// KindTimeout error). The client is copied, not modified: its
	// transport is wrapped to read response headers.
	HTTPClient *http.Client
}

// Client calls an OpenAI-compatible chat-completions endpoint. It
// implements model.Client and model.Streamer and is safe for concurrent
// use.
type Client struct {
	api   *goopenai.Client
	model string
	key   string // only to scrub it out of error text
}

var (
	_ model.Client   = (*Client)(nil)
	_ model.Streamer = (*Client)(nil)
)

// New returns a client for cfg. It makes no network call.
func New(cfg Config) *Client {
	oc := goopenai.DefaultConfig(cfg.APIKey)
	if cfg.BaseURL != "" {
		oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	}
	hc := &http.Client{}
	if cfg.HTTPClient != nil {
		copied := *cfg.HTTPClient
		hc = &copied
	}
	hc.Transport = &captureTransport{base: hc.Transport}
	oc.HTTPClient = hc
	return &Client{api: goopenai.NewClientWithConfig(oc), model: cfg.Model, key: cfg.APIKey}
}

// Complete makes one non-streamed chat-completion call.
func (c *Client) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	creq, err := c.buildRequest(req)
	if err != nil {
		return model.Response{}, err
	}
	cctx, capt := withCapture(ctx)
	resp, err := c.api.CreateChatCompletion(cctx, creq)
	if err != nil {
		return model.Response{}, c.classify(ctx, err, capt)
	}
	return c.fromResponse(resp)
}

// Stream makes one streamed chat-completion call. onDelta (which may be
// nil) runs on the calling goroutine for each content or tool-call
// fragment, in arrival order, before Stream returns.
func (c *Client) Stream(ctx context.Context, req model.Request, onDelta func(model.Delta)) (model.Response, error) {
	creq, err := c.buildRequest(req)
	if err != nil {
		return model.Response{}, err
	}
	creq.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
	cctx, capt := withCapture(ctx)
	st, err := c.api.CreateChatCompletionStream(cctx, creq)
	if err != nil {
		return model.Response{}, c.classify(ctx, err, capt)
	}
	defer st.Close()
	return c.readStream(ctx, st, capt, onDelta)
}
