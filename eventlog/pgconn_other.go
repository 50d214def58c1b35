//go:build !linux

package eventlog

import (
	"syscall"
	"time"
)

// setUserTimeout does nothing where TCP_USER_TIMEOUT does not exist; the
// keepalives still bound a dead connection.
func setUserTimeout(time.Duration) func(network, address string, c syscall.RawConn) error {
	return nil
}
