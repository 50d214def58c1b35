package opensandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// service is one HTTP service: the lifecycle server or a sandbox's execd.
// Every request carries its headers (the API key; the endpoint headers the
// lifecycle server handed out for execd).
type service struct {
	http    *http.Client
	base    string // scheme://host[:port][/prefix], no trailing slash
	headers map[string]string
}

// baseURL builds a service base from a domain or endpoint the way the
// official SDK does: used as is when it has a scheme, otherwise prefixed
// with protocol; a trailing slash is dropped.
func baseURL(protocol, hostPath string) string {
	if !strings.HasPrefix(hostPath, "http://") && !strings.HasPrefix(hostPath, "https://") {
		hostPath = protocol + "://" + hostPath
	}
	return strings.TrimRight(hostPath, "/")
}

// request builds a request for path (which starts with "/") and query.
func (s *service) request(ctx context.Context, method, path string, query url.Values, body io.Reader, contentType string) (*http.Request, error) {
	u := s.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	for k, v := range s.headers {
		req.Header.Set(k, v)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return req, nil
}

// send performs req and returns the response if its status is 2xx; any
// other status becomes an *APIError and the body is closed.
func (s *service) send(req *http.Request) (*http.Response, error) {
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return nil, decodeError(req.Method, redact(req.URL), resp.StatusCode, body)
}

// do sends a JSON request (in may be nil) and decodes a JSON response into
// out (may be nil: the body is discarded).
func (s *service) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	var body io.Reader
	contentType := ""
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		body, contentType = bytes.NewReader(data), "application/json"
	}
	req, err := s.request(ctx, method, path, query, body, contentType)
	if err != nil {
		return err
	}
	resp, err := s.send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decode %s %s: %w", method, redact(req.URL), err)
	}
	return nil
}

// redact drops the query from a URL so error messages stay short; the
// operation's own error wrapping names the path.
func redact(u *url.URL) string {
	c := *u
	c.RawQuery = ""
	return c.String()
}
