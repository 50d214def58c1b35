// Package httporigin names a URL's origin (scheme, host and port), the
// unit the HTTP clients that carry credentials (flow/mcptool,
// memory/openviking) send them to and nowhere else. Go's own redirect
// rule compares host names without ports, which is not enough.
//
// It imports nothing of rath.
package httporigin
