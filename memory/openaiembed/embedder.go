package openaiembed

import (
	"context"
	"fmt"
	"net/http"
	"os"

	openai "github.com/sashabaranov/go-openai"

	"github.com/gorath/rath/memory"
)

// Defaults for Config fields left zero.
const (
	// DefaultBaseURL is OpenAI's API.
	DefaultBaseURL = "https://api.openai.com/v1"
	// DefaultBatchSize is the most texts sent in one request.
	DefaultBatchSize = 256
)

// Config configures an Embedder. Empty fields fall back to the environment
// and then to defaults.
type Config struct {
	// BaseURL is the API base, including the version path (like
	// "http://localhost:8080/v1"). Empty means $OPENAI_BASE_URL, then
	// DefaultBaseURL.
	BaseURL string
	// APIKey is sent as a bearer token. Empty means $OPENAI_API_KEY (local
	// servers often need none).
	APIKey string
	// Model is the embeddings model. Empty means $OPENAI_EMBEDDING_MODEL;
	// one of the two is required.
	Model string
	// Dimensions asks for shorter vectors (text-embedding-3 models). Zero
	// means the model's default.
	Dimensions int
	// BatchSize caps the texts per request. Zero means DefaultBatchSize.
	BatchSize int
	// HTTPClient is the client used. Nil means http.DefaultClient.
	HTTPClient *http.Client
}

// Embedder calls an OpenAI-compatible embeddings endpoint. It is safe for
// concurrent use.
type Embedder struct {
	client *openai.Client
	model  string
	dims   int
	batch  int
}

var _ memory.Embedder = (*Embedder)(nil)

// New returns an Embedder, or ErrConfig if no model is set.
func New(cfg Config) (*Embedder, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = os.Getenv("OPENAI_BASE_URL")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv("OPENAI_API_KEY")
	}
	if cfg.Model == "" {
		cfg.Model = os.Getenv("OPENAI_EMBEDDING_MODEL")
	}
	if cfg.Model == "" {
		return nil, fmt.Errorf("%w: no model (set Config.Model or OPENAI_EMBEDDING_MODEL)", ErrConfig)
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = cfg.BaseURL
	if cfg.HTTPClient != nil {
		oc.HTTPClient = cfg.HTTPClient
	}
	return &Embedder{client: openai.NewClientWithConfig(oc), model: cfg.Model, dims: cfg.Dimensions, batch: cfg.BatchSize}, nil
}

// Embed returns one vector per text, in order, sending at most BatchSize
// texts per request. Errors: the endpoint's (an *openai.APIError for HTTP
// errors), or ErrResponse.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += e.batch {
		part := texts[start:min(len(texts), start+e.batch)]
		resp, err := e.client.CreateEmbeddings(ctx, openai.EmbeddingRequestStrings{
			Input:      part,
			Model:      openai.EmbeddingModel(e.model),
			Dimensions: e.dims,
		})
		if err != nil {
			return nil, fmt.Errorf("openaiembed: embed %d texts: %w", len(part), err)
		}
		vecs := make([][]float32, len(part))
		for _, d := range resp.Data {
			if d.Index < 0 || d.Index >= len(part) || vecs[d.Index] != nil {
				return nil, fmt.Errorf("%w: unexpected index %d for %d inputs", ErrResponse, d.Index, len(part))
			}
			vecs[d.Index] = d.Embedding
		}
		for i, v := range vecs {
			if len(v) == 0 {
				return nil, fmt.Errorf("%w: no vector for input %d", ErrResponse, i)
			}
		}
		out = append(out, vecs...)
	}
	return out, nil
}
