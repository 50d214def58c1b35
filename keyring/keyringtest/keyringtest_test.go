package keyringtest_test

import (
	"testing"

	"github.com/gorath/rath/keyring/keyringtest"
)

// Two keys made for tests are two different keys.
func TestKEK_EachIsNew(t *testing.T) {
	a, b := keyringtest.KEK(t), keyringtest.KEK(t)
	if a.ID() == b.ID() {
		t.Fatalf("two keys share the id %s", a.ID())
	}
}
