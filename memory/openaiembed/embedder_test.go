package openaiembed_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/gorath/rath"
	"github.com/gorath/rath/memory"
	"github.com/gorath/rath/memory/openaiembed"
)

// concepts are the dimensions of the fake model: a text's vector counts
// the words of each concept it contains.
var concepts = [][]string{
	{"urgent", "asap", "immediately", "now"},
	{"later", "someday", "eventually"},
	{"cat", "kitten", "feline"},
}

func vector(text string) []float32 {
	v := make([]float32, len(concepts))
	for _, w := range strings.Fields(strings.ToLower(text)) {
		w = strings.Trim(w, ".,!?")
		for i, c := range concepts {
			for _, cw := range c {
				if w == cw {
					v[i]++
				}
			}
		}
	}
	return v
}

// fakeServer is an OpenAI-compatible embeddings endpoint. It answers in
// reverse order (the index field says where each vector goes) and counts
// requests and texts.
type fakeServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests int
	texts    int
	status   int    // if set, fail with it
	drop     bool   // if set, omit the last vector
	model    string // last model asked for
}

func newFakeServer(t *testing.T) *fakeServer {
	f := &fakeServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "bad request "+r.Method+" "+r.URL.Path, http.StatusBadRequest)
			return
		}
		var req struct {
			Input []string `json:"input"`
			Model string   `json:"model"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.requests++
		f.texts += len(req.Input)
		f.model = req.Model
		status, drop := f.status, f.drop
		f.mu.Unlock()
		if status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprint(w, `{"error":{"message":"nope","type":"invalid_request_error","code":"invalid_api_key"}}`)
			return
		}
		type item struct {
			Object    string    `json:"object"`
			Embedding []float32 `json:"embedding"`
			Index     int       `json:"index"`
		}
		var data []item
		for i := len(req.Input) - 1; i >= 0; i-- {
			if drop && i == len(req.Input)-1 {
				continue
			}
			data = append(data, item{"embedding", vector(req.Input[i]), i})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model})
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) fail(status int, drop bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.drop = status, drop
}

func (f *fakeServer) lastModel() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.model
}

func (f *fakeServer) counts() (requests, texts int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests, f.texts
}

func TestEmbedder_Embed(t *testing.T) {
	srv := newFakeServer(t)
	e, err := openaiembed.New(openaiembed.Config{BaseURL: srv.URL + "/v1", APIKey: "k", Model: "fake-embed", BatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"urgent cat", "later", "a kitten now", "nothing", "feline feline"}
	got, err := e.Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		if fmt.Sprint(got[i]) != fmt.Sprint(vector(text)) {
			t.Errorf("vector %d = %v, want %v", i, got[i], vector(text))
		}
	}
	if req, n := srv.counts(); req != 3 || n != len(texts) {
		t.Fatalf("%d requests for %d texts, want 3 for %d", req, n, len(texts))
	}
	if got := srv.lastModel(); got != "fake-embed" {
		t.Fatalf("model sent = %q", got)
	}
}

func TestEmbedder_Errors(t *testing.T) {
	srv := newFakeServer(t)
	e, err := openaiembed.New(openaiembed.Config{BaseURL: srv.URL + "/v1", APIKey: "k", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	srv.fail(http.StatusUnauthorized, false)
	_, err = e.Embed(t.Context(), []string{"x"})
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusUnauthorized {
		t.Fatalf("err = %v, want an *openai.APIError with status 401", err)
	}
	srv.fail(0, true)
	if _, err := e.Embed(t.Context(), []string{"x", "y"}); !errors.Is(err, openaiembed.ErrResponse) {
		t.Fatalf("err = %v, want ErrResponse", err)
	}
}

func TestNew_Config(t *testing.T) {
	t.Setenv("OPENAI_EMBEDDING_MODEL", "")
	if _, err := openaiembed.New(openaiembed.Config{}); !errors.Is(err, openaiembed.ErrConfig) {
		t.Fatalf("no model: err = %v, want ErrConfig", err)
	}
	srv := newFakeServer(t)
	t.Setenv("OPENAI_EMBEDDING_MODEL", "from-env")
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "k")
	e, err := openaiembed.New(openaiembed.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Embed(t.Context(), []string{"cat"}); err != nil {
		t.Fatal(err)
	}
	if got := srv.lastModel(); got != "from-env" {
		t.Fatalf("model sent = %q, want the environment's", got)
	}
}

// TestLocal_RerankWithEndpoint runs the local memory's re-ranking against
// the fake endpoint: BM25 alone ranks the short "cat" memo first; the
// embeddings prefer the one about urgency, like the query.
func TestLocal_RerankWithEndpoint(t *testing.T) {
	srv := newFakeServer(t)
	e, err := openaiembed.New(openaiembed.Config{BaseURL: srv.URL + "/v1", APIKey: "k", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	rt, err := rath.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	plain, err := memory.OpenLocal(ctx, rt.Store(), filepath.Join(rt.Dir(), "plain.bleve"), memory.LocalOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	reranked, err := memory.OpenLocal(ctx, rt.Store(), filepath.Join(rt.Dir(), "reranked.bleve"), memory.LocalOptions{Logger: quiet, Embedder: e})
	if err != nil {
		t.Fatal(err)
	}
	defer reranked.Close()
	feed, _ := plain.Remember(ctx, "ns", "Feed the cat.", nil)
	vet, _ := plain.Remember(ctx, "ns", "Take the cat to the vet immediately, it is urgent.", nil)
	plain.Remember(ctx, "ns", "Water the plants.", nil)

	hits, err := plain.Recall(ctx, "ns", "cat now", 2)
	if err != nil || len(hits) != 2 || hits[0].ID != feed {
		t.Fatalf("BM25 alone: %v, %v; want %s first", hits, err, feed)
	}
	hits, err = reranked.Recall(ctx, "ns", "cat now", 2)
	if err != nil || len(hits) != 2 || hits[0].ID != vet {
		t.Fatalf("re-ranked: %v, %v; want %s first", hits, err, vet)
	}
	_, before := srv.counts()
	if _, err := reranked.Recall(ctx, "ns", "cat now", 2); err != nil {
		t.Fatal(err)
	}
	if _, after := srv.counts(); after-before != 1 {
		t.Fatalf("second recall embedded %d texts, want only the query (memories are cached)", after-before)
	}
}

func ExampleNew() {
	// A stand-in for an OpenAI-compatible server.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.6,0.8]}]}`)
	}))
	defer srv.Close()

	e, err := openaiembed.New(openaiembed.Config{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "text-embedding-3-small"})
	if err != nil {
		panic(err)
	}
	vecs, err := e.Embed(context.Background(), []string{"remember the milk"})
	fmt.Println(vecs, err)
	// Output: [[0.6 0.8]] <nil>
}
