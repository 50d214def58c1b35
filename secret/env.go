package secret

import (
	"net/url"
	"strings"
)

// Well-known variables whose values are always secret.
var knownEnv = []string{"RATH_HMAC_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"}

// LooksSecret reports whether an environment variable's name says it
// holds a credential: the well-known keys, and names with KEY, APIKEY,
// TOKEN, SECRET, PASSWORD, PASSWD, CREDENTIAL(S) or PAT in them as a word
// (so KEYBOARD_LAYOUT and SSH_AUTH_SOCK are not).
func LooksSecret(name string) bool {
	up := strings.ToUpper(name)
	for _, k := range knownEnv {
		if up == k {
			return true
		}
	}
	for _, word := range strings.FieldsFunc(up, func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		switch word {
		case "KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "CREDENTIALS", "PAT":
			return true
		}
	}
	return false
}

// FromEnviron returns the variables of environ ("NAME=value" pairs, as
// os.Environ gives them) whose names LooksSecret says hold credentials,
// each named after its variable, the headers of the OpenTelemetry
// exporter (see FromOTLPHeaders), and the passwords inside the others'
// connection strings (RATH_DSN, DATABASE_URL: see FromDSN).
func FromEnviron(environ []string) []Secret {
	var out []Secret
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		switch {
		case !ok || value == "":
		case LooksSecret(name):
			out = append(out, Secret{Name: name, Value: value})
		case otlpHeaders(name):
			out = append(out, FromOTLPHeaders(name, value)...)
		default:
			out = append(out, FromDSN(name, value)...)
		}
	}
	return out
}

// otlpHeaders reports whether name is one of the OpenTelemetry exporter's
// header variables: OTEL_EXPORTER_OTLP_HEADERS and its per-signal forms
// (OTEL_EXPORTER_OTLP_TRACES_HEADERS, ..._METRICS_HEADERS, ...).
func otlpHeaders(name string) bool {
	up := strings.ToUpper(name)
	return strings.HasPrefix(up, "OTEL_EXPORTER_OTLP_") && strings.HasSuffix(up, "HEADERS")
}

// FromOTLPHeaders returns the secrets in value, a header variable of the
// OpenTelemetry exporter (name, as OTEL_EXPORTER_OTLP_HEADERS): the whole
// value, and each header's value as written and percent-decoded (the form
// the exporter sends), named name.header. Those headers carry the
// collector's credentials, whatever the header is called.
func FromOTLPHeaders(name, value string) []Secret {
	out := []Secret{{Name: name, Value: value}}
	for _, h := range strings.Split(value, ",") {
		k, v, ok := strings.Cut(h, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		out = append(out, Secret{Name: name + "." + k, Value: v})
		dv, err := url.PathUnescape(v)
		if err != nil {
			continue
		}
		if dv != v {
			out = append(out, Secret{Name: name + "." + k, Value: dv})
		}
		// "Bearer TOKEN", "Basic CREDENTIALS": the credential alone too.
		if _, cred, ok := strings.Cut(dv, " "); ok {
			out = append(out, Secret{Name: name + "." + k, Value: strings.TrimSpace(cred)})
		}
	}
	return out
}
