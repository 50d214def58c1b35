package opensandbox

import (
	"errors"
	"io"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/gorath/rath/sandbox"
)

func TestFrameReader(t *testing.T) {
	type dropped struct {
		n      int64
		stderr bool
	}
	tests := []struct {
		name    string
		stream  string
		max     int
		types   []string
		texts   []string
		dropped []dropped
	}{
		{
			name:   "bare json frames",
			stream: "{\"type\":\"init\",\"text\":\"x1\"}\n\n{\"type\":\"stdout\",\"text\":\"hi\"}\n\n{\"type\":\"execution_complete\",\"execution_time\":3}\n\n",
			max:    1 << 10,
			types:  []string{"init", "stdout", "execution_complete"},
			texts:  []string{"x1", "hi", ""},
		},
		{
			name:   "sse decorations",
			stream: ": comment\nevent: message\nid: 7\nretry: 100\ndata: {\"type\":\"stdout\",\"text\":\"a\"}\n\ndata:{\"type\":\"stderr\",\"text\":\"b\"}\r\n\r\n",
			max:    1 << 10,
			types:  []string{"stdout", "stderr"},
			texts:  []string{"a", "b"},
		},
		{
			name:   "last frame without newline",
			stream: "{\"type\":\"stdout\",\"text\":\"end\"}",
			max:    1 << 10,
			types:  []string{"stdout"},
			texts:  []string{"end"},
		},
		{
			name: "oversize frames are dropped and counted",
			stream: "{\"type\":\"stdout\",\"text\":\"" + strings.Repeat("x", 300) + "\"}\n\n" +
				"{\"type\":\"stdout\",\"text\":\"ok\"}\n\n" +
				"{\"text\":\"" + strings.Repeat("e", 300) + "\",\"type\":\"stderr\"}\n",
			max:     100,
			types:   []string{"stdout"},
			texts:   []string{"ok"},
			dropped: []dropped{{328, false}, {328, true}}, // 327 bytes of JSON and a newline
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []dropped
			// One byte at a time: frames must survive arbitrary splits.
			fr := newFrameReader(iotest.OneByteReader(strings.NewReader(tt.stream)), tt.max, func(head, tail []byte, n int64) {
				stderr := strings.Contains(string(head), `"stderr"`) || strings.Contains(string(tail), `"stderr"`)
				got = append(got, dropped{n, stderr})
			})
			var types, texts []string
			for {
				ev, err := fr.next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				types, texts = append(types, ev.Type), append(texts, ev.Text)
			}
			if !slices.Equal(types, tt.types) || !slices.Equal(texts, tt.texts) {
				t.Errorf("events %q %q, want %q %q", types, texts, tt.types, tt.texts)
			}
			if !slices.Equal(got, tt.dropped) {
				t.Errorf("dropped %v, want %v", got, tt.dropped)
			}
		})
	}
	t.Run("garbage", func(t *testing.T) {
		fr := newFrameReader(strings.NewReader("not json\n"), 100, nil)
		if _, err := fr.next(); err == nil || errors.Is(err, io.EOF) {
			t.Errorf("garbage frame: %v", err)
		}
	})
}

func TestDecodeError(t *testing.T) {
	tests := []struct {
		name, body    string
		code, message string
	}{
		{"envelope", `{"code":"DOCKER::SANDBOX_NOT_FOUND","message":"Sandbox x not found."}`, "DOCKER::SANDBOX_NOT_FOUND", "Sandbox x not found."},
		{"fastapi 422", `{"detail":[{"type":"missing","loc":["body","resourceLimits"],"msg":"Field required","input":null},{"loc":["body","timeout"],"msg":"too small"}]}`, "", "body.resourceLimits: Field required; body.timeout: too small"},
		{"fastapi string detail", `{"detail":"Not Found"}`, "", "Not Found"},
		{"execd token", `{"error":"Unauthorized: invalid or missing header X-EXECD-ACCESS-TOKEN"}`, "", "Unauthorized: invalid or missing header X-EXECD-ACCESS-TOKEN"},
		{"plain text", "bad gateway\n", "", "bad gateway"},
		{"empty", "", "", ""},
	}
	for _, tt := range tests {
		e := decodeError("GET", "http://x/y", 400, []byte(tt.body))
		if e.Code != tt.code || e.Message != tt.message {
			t.Errorf("%s: code %q message %q, want %q %q", tt.name, e.Code, e.Message, tt.code, tt.message)
		}
	}
	if !errors.Is(decodeError("GET", "u", 404, nil), sandbox.ErrNotFound) {
		t.Error("a 404 does not match sandbox.ErrNotFound")
	}
	if errors.Is(decodeError("GET", "u", 500, nil), sandbox.ErrNotFound) {
		t.Error("a 500 matches sandbox.ErrNotFound")
	}
	if got, want := decodeError("POST", "http://h/v1/sandboxes", 422, []byte(`{"detail":[{"loc":["body","timeout"],"msg":"m"}]}`)).Error(),
		"opensandbox: POST http://h/v1/sandboxes: 422 Unprocessable Entity: body.timeout: m"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestParseSpec(t *testing.T) {
	tests := []struct {
		in   string
		want spec
		err  bool
	}{
		{"", spec{}, false},
		{"python:3.11", spec{image: "python:3.11"}, false},
		{"registry.example.com:5000/team/img:tag", spec{image: "registry.example.com:5000/team/img:tag"}, false},
		{"image=python:3.11&timeout=2h", spec{image: "python:3.11", lifetime: 2 * time.Hour}, false},
		{"timeout=600", spec{lifetime: 10 * time.Minute}, false},
		{"cpu=500m&memory=512Mi", spec{cpu: "500m", memory: "512Mi"}, false},
		{"id=abc&workdir=/home/user/", spec{id: "abc", workdir: "/home/user"}, false},
		{"workdir=relative", spec{}, true},
		{"timeout=soon", spec{}, true},
		{"flavour=large", spec{}, true},
		{"image=", spec{}, true},
		{"image=a&image=b", spec{}, true},
		{"id=abc&image=python:3.11", spec{}, true},
		{"image=%zz", spec{}, true},
	}
	for _, tt := range tests {
		got, err := parseSpec(tt.in)
		if tt.err {
			if !errors.Is(err, sandbox.ErrInvalidSpec) {
				t.Errorf("parseSpec(%q) error = %v, want ErrInvalidSpec", tt.in, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseSpec(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestCreateRequest(t *testing.T) {
	var b Backend
	req := b.createRequest(spec{})
	if req.Image.URI != DefaultImage || !slices.Equal(req.Entrypoint, DefaultEntrypoint()) || req.Timeout != 3600 || req.ResourceLimits["memory"] != "2Gi" {
		t.Errorf("defaults: %+v", req)
	}
	req = b.createRequest(spec{image: "python:3.11", lifetime: 90 * time.Second, cpu: "2"})
	if req.Image.URI != "python:3.11" || !slices.Equal(req.Entrypoint, []string{"tail", "-f", "/dev/null"}) || req.Timeout != 90 || req.ResourceLimits["cpu"] != "2" || req.ResourceLimits["memory"] != "2Gi" {
		t.Errorf("spec overrides: %+v", req)
	}
	b = Backend{Image: "custom", Entrypoint: []string{"/init"}, Resources: map[string]string{"cpu": "4"}}
	req = b.createRequest(spec{})
	if req.Image.URI != "custom" || !slices.Equal(req.Entrypoint, []string{"/init"}) || req.ResourceLimits["cpu"] != "4" {
		t.Errorf("backend fields: %+v", req)
	}
}

func TestRemoteInfo_FileMode(t *testing.T) {
	tests := []struct {
		ri   remoteInfo
		want fs.FileMode
	}{
		{remoteInfo{Type: "file", Mode: 644}, 0o644},
		{remoteInfo{Type: "directory", Mode: 755}, fs.ModeDir | 0o755},
		{remoteInfo{Type: "symlink", Mode: 777}, fs.ModeSymlink | 0o777},
		{remoteInfo{Type: "other", Mode: 600}, fs.ModeIrregular | 0o600},
		{remoteInfo{Type: "file", Mode: 999}, 0}, // not octal digits
	}
	for _, tt := range tests {
		if got := tt.ri.fileMode(); got != tt.want {
			t.Errorf("%+v: mode %v, want %v", tt.ri, got, tt.want)
		}
	}
}

func TestBaseURL(t *testing.T) {
	tests := []struct{ protocol, in, want string }{
		{"http", "localhost:8080", "http://localhost:8080"},
		{"https", "sandbox.example.com/", "https://sandbox.example.com"},
		{"http", "https://secure.example.com", "https://secure.example.com"},
		{"http", "127.0.0.1:9000/sandboxes/abc/proxy/44772", "http://127.0.0.1:9000/sandboxes/abc/proxy/44772"},
	}
	for _, tt := range tests {
		if got := baseURL(tt.protocol, tt.in); got != tt.want {
			t.Errorf("baseURL(%q, %q) = %q, want %q", tt.protocol, tt.in, got, tt.want)
		}
	}
}
