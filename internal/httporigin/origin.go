package httporigin

import (
	"net"
	"net/url"
	"strings"
)

// Of is u's scheme, host and port, lowercased, the port made explicit
// (80 for http, 443 for https): two URLs share an origin when Of is equal.
func Of(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}
