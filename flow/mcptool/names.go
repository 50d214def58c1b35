package mcptool

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// MaxToolName is the longest tool name the OpenAI and Anthropic APIs
// accept.
const MaxToolName = 64

// maxServerName leaves room for a tool name after the prefix.
const maxServerName = 32

// Separator joins a server's name and its tool's name.
const Separator = "__"

func nameChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}

// checkServerName accepts names that can prefix a tool name as they are.
func checkServerName(name string) error {
	if name == "" || len(name) > maxServerName || strings.IndexFunc(name, func(r rune) bool { return !nameChar(r) }) >= 0 {
		return fmt.Errorf("%w %q: use 1 to %d of A-Z a-z 0-9 _ -", ErrInvalidName, name, maxServerName)
	}
	return nil
}

// ToolName is the name a server's tool gets as a flow.Tool: server__tool
// (or the tool alone when bare), with characters a model API rejects
// replaced by "_"; a name longer than MaxToolName is cut and suffixed with
// a hash of the full name. Manager.Tools also adds that suffix when
// sanitizing makes two of a server's tools equal ("a.b" and "a/b").
func ToolName(server, tool string, bare bool) string {
	full := tool
	if !bare {
		full = server + Separator + tool
	}
	name := strings.Map(func(r rune) rune {
		if nameChar(r) {
			return r
		}
		return '_'
	}, full)
	if name == "" {
		return "_"
	}
	if len(name) > MaxToolName {
		return withHash(name, full)
	}
	return name
}

// withHash suffixes name with a hash of full, cutting name to fit.
func withHash(name, full string) string {
	sum := sha256.Sum256([]byte(full))
	suffix := "_" + hex.EncodeToString(sum[:4])
	return name[:min(len(name), MaxToolName-len(suffix))] + suffix
}
