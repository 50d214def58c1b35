package secret

import (
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
// each named after its variable, and the passwords inside the others'
// connection strings (RATH_DSN, DATABASE_URL: see FromDSN).
func FromEnviron(environ []string) []Secret {
	var out []Secret
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		switch {
		case !ok || value == "":
		case LooksSecret(name):
			out = append(out, Secret{Name: name, Value: value})
		default:
			out = append(out, FromDSN(name, value)...)
		}
	}
	return out
}
