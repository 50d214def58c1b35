package mcptool_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gorath/rath/flow/mcptool"
)

func TestParseFlag(t *testing.T) {
	tests := []struct {
		in, name, typ, url, cmd string
		err                     string
	}{
		{in: "a=http://127.0.0.1:1/mcp", name: "a", typ: "http", url: "http://127.0.0.1:1/mcp"},
		{in: " b = https://h/mcp ", name: "b", typ: "http", url: "https://h/mcp"},
		{in: "c=sse+https://h/sse", name: "c", typ: "sse", url: "https://h/sse"},
		{in: "d=node  x.js stdio", name: "d", cmd: "node"},
		{in: "nothing", err: "want NAME=URL"},
		{in: "e=", err: "want NAME=URL"},
		{in: "bad name=x", err: "invalid server name"},
		{in: "f=http://", err: "want http:// or https://"},
	}
	for _, tt := range tests {
		name, srv, err := mcptool.ParseFlag(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q", tt.in, err, tt.err)
			}
			if err != nil && !errors.Is(err, mcptool.ErrConfig) && !errors.Is(err, mcptool.ErrInvalidName) {
				t.Errorf("%q: untyped error %v", tt.in, err)
			}
			continue
		}
		if err != nil || name != tt.name || srv.Type != tt.typ || srv.URL != tt.url || srv.Command != tt.cmd {
			t.Errorf("%q: %q %+v %v", tt.in, name, srv, err)
		}
	}
}
