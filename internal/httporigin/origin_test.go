package httporigin_test

import (
	"net/url"
	"testing"

	"github.com/gorath/rath/internal/httporigin"
)

func TestOf(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		same bool
	}{
		{"http://h/x", "HTTP://H:80/y", true},
		{"https://h/x", "https://h:443", true},
		{"http://h:8080/", "http://h:8081/", false},
		{"http://h/", "https://h/", false},
		{"http://127.0.0.1/", "http://localhost/", false},
		{"http://[::1]:9/", "http://[::1]:9/a", true},
	} {
		a, _ := url.Parse(tt.a)
		b, _ := url.Parse(tt.b)
		if got := httporigin.Of(a) == httporigin.Of(b); got != tt.same {
			t.Errorf("%s ~ %s: same %v, want %v", tt.a, tt.b, got, tt.same)
		}
	}
}
