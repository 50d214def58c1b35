package anthropic

import (
	"context"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/gorath/rath/flow/model"
)

// Provider is the Provider field of the errors this client returns.
const Provider = "anthropic"

// DefaultMaxTokens is the max_tokens sent when neither the request's
// sampling nor the Config sets one: the API requires the field.
const DefaultMaxTokens = 4096

// Config configures a Client.
type Config struct {
	// BaseURL is the API origin, like "https://api.anthropic.com" (the
	// SDK adds /v1/messages). Empty means the SDK's production URL.
	BaseURL string
	// APIKey is sent as x-api-key.
	APIKey string
	// Model is used when a Request names none.
	Model string
	// MaxTokens is used when a Request's Sampling.MaxTokens is 0. Zero
	// means DefaultMaxTokens.
	MaxTokens int
	// HTTPClient, if set, is used for the calls.
	HTTPClient *http.Client
}

// Client calls the Anthropic messages API. It implements model.Client and
// model.Streamer and is safe for concurrent use.
type Client struct {
	api       sdk.Client
	model     string
	maxTokens int64
	key       string // only to scrub it out of error text
}

var (
	_ model.Client   = (*Client)(nil)
	_ model.Streamer = (*Client)(nil)
)

// New returns a client for cfg. It makes no network call.
func New(cfg Config) *Client {
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithMaxRetries(0),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	maxTokens := int64(cfg.MaxTokens)
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	return &Client{api: sdk.NewClient(opts...), model: cfg.Model, maxTokens: maxTokens, key: cfg.APIKey}
}

// Complete makes one non-streamed messages call. When max_tokens is so
// large that the SDK refuses a non-streamed call (it could outlast
// connection timeouts), it streams instead, which gives the same result.
func (c *Client) Complete(ctx context.Context, req model.Request) (model.Response, error) {
	params, err := c.buildParams(req)
	if err != nil {
		return model.Response{}, err
	}
	if _, err := sdk.CalculateNonStreamingTimeout(int(params.MaxTokens), params.Model, nil); err != nil {
		return c.stream(ctx, params, nil)
	}
	msg, err := c.api.Messages.New(ctx, params)
	if err != nil {
		return model.Response{}, c.classify(ctx, err)
	}
	return c.fromMessage(msg)
}

// Stream makes one streamed messages call. onDelta (which may be nil)
// runs on the calling goroutine for each text or tool-input fragment, in
// arrival order, before Stream returns.
func (c *Client) Stream(ctx context.Context, req model.Request, onDelta func(model.Delta)) (model.Response, error) {
	params, err := c.buildParams(req)
	if err != nil {
		return model.Response{}, err
	}
	return c.stream(ctx, params, onDelta)
}
