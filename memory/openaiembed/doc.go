// Package openaiembed is a memory.Embedder for OpenAI-compatible embeddings
// endpoints (POST {base}/embeddings), for the optional re-ranking of recalls
// in package memory.
//
// It owns the HTTP client configuration and the mapping of the endpoint's
// response to one vector per input text. It does not cache (memory.Local
// caches memory embeddings) and does not retry. It imports package memory
// and github.com/sashabaranov/go-openai.
package openaiembed
