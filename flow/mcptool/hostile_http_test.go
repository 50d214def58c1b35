package mcptool_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gorath/rath/flow/mcptool"
)

// rawServer speaks streamable HTTP's JSON responses by hand, so a test
// can make it answer tools/list with anything.
func rawServer(t *testing.T, toolsList func(w http.ResponseWriter, id json.RawMessage)) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "no stream", http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if req.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch req.Method {
		case "initialize":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}}`, req.ID)
		case "tools/list":
			toolsList(w, req.ID)
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}`, req.ID)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// A server that answers tools/list with a body that does not end (here:
// stops at 100 MiB) is cut off at mcptool's bound, with a typed error; the
// client does not read it all into memory.
func TestManager_HTTPHugeResponse(t *testing.T) {
	var wrote atomic.Int64
	const huge = 100 << 20
	s := rawServer(t, func(w http.ResponseWriter, id json.RawMessage) {
		n, _ := fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"t","description":"`, id)
		chunk := []byte(strings.Repeat("x", 64<<10))
		for total := n; total < huge; {
			n, err := w.Write(chunk)
			total += n
			wrote.Store(int64(total))
			if err != nil {
				return
			}
		}
	})
	m := MustManager(t, mcptool.Options{})
	if err := m.ConnectServer(t.Context(), "big", mcptool.Server{URL: s.URL}); err != nil {
		t.Fatal(err)
	}
	_, err := m.Tools(t.Context(), "big")
	if err == nil {
		t.Fatal("a 100 MiB tool list was accepted")
	}
	// The SDK reports the transport's error in its own words.
	if !strings.Contains(err.Error(), "longer than") {
		t.Errorf("error %v, want the bound's", err)
	}
	if w := wrote.Load(); w >= huge {
		t.Errorf("the client read all %d bytes", w)
	}
}

// A tool whose input schema refers to itself is listed (its schema is
// passed on, not resolved); one nested past the JSON decoder's depth
// fails the listing with an error, and neither hangs or crashes.
func TestManager_HTTPRecursiveSchema(t *testing.T) {
	loop := `{"type":"object","$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}}},"properties":{"x":{"$ref":"#/$defs/n"}}}`
	deep := strings.Repeat(`{"type":"object","properties":{"a":`, 20000) + `{}` + strings.Repeat(`}}`, 20000)
	for _, tc := range []struct {
		name, schema string
		ok           bool
	}{{"loop", loop, true}, {"deep", deep, false}} {
		t.Run(tc.name, func(t *testing.T) {
			s := rawServer(t, func(w http.ResponseWriter, id json.RawMessage) {
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"t","inputSchema":%s}]}}`, id, tc.schema)
			})
			m := MustManager(t, mcptool.Options{})
			if err := m.ConnectServer(t.Context(), "rec", mcptool.Server{URL: s.URL}); err != nil {
				t.Fatal(err)
			}
			tools, err := m.Tools(t.Context(), "rec")
			if tc.ok && (err != nil || len(tools) != 1) {
				t.Fatalf("tools %d, %v", len(tools), err)
			}
			if !tc.ok && err == nil {
				t.Fatalf("a schema nested 20000 deep was accepted")
			}
		})
	}
}
