//go:build !integration

package retention_test

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	built.Remove()
	os.Exit(code)
}
