package cli

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"math"
)

// Console tokens off loopback: the token is all that stands between the
// network and the store's contents and its approvals.
const (
	// minTokenBits is the least entropy a token may have.
	minTokenBits = 128
	// tokenGenerate is the --token value that asks for a fresh token.
	tokenGenerate = "generate"
	// makeTokenHint says how to get a good token.
	makeTokenHint = "rath serve --token generate (printed once), or RATH_TOKEN=$(openssl rand -base64 32)"
)

// newToken returns a random token of 256 bits, URL-safe.
func newToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate a token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// tokenBits estimates a token's entropy as if each character were drawn
// at random from the smallest alphabet holding them all: digits (10),
// hex (16) or base64 (64); a token of fewer than 8 distinct characters
// ("aaaa…", "abab…") draws from those alone (a random token of 22 base64
// or 32 hex characters practically never has so few). It is an upper
// bound for a token a person chose ("password1234…" is long, not
// random), and exact for a random one.
func tokenBits(token string) float64 {
	alphabet, digits, hex := 64.0, true, true
	distinct := map[rune]bool{}
	n := 0
	for _, r := range token {
		n++
		distinct[r] = true
		isDigit := r >= '0' && r <= '9'
		digits = digits && isDigit
		hex = hex && (isDigit || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F')
	}
	switch {
	case digits:
		alphabet = 10
	case hex:
		alphabet = 16
	}
	if len(distinct) < 8 {
		alphabet = float64(len(distinct))
	}
	if alphabet < 2 {
		return 0
	}
	return float64(n) * math.Log2(alphabet)
}

// checkToken refuses a token too weak to guard a console off loopback.
func checkToken(token string) error {
	if bits := tokenBits(token); bits < minTokenBits {
		return fmt.Errorf("the token has at most %.0f bits of entropy; a console off loopback needs %d (22 random base64 characters, or 32 hex): make one with %s",
			bits, minTokenBits, makeTokenHint)
	}
	return nil
}
