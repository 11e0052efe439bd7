//go:build !linux

package httpmedia

import (
	"errors"
	"syscall"
)

// writeNow is implemented for Linux, where the engine runs.
func writeNow(raw syscall.RawConn, iov []syscall.Iovec, bufs [][]byte) (int, []syscall.Iovec, error) {
	return 0, iov, errors.New("httpmedia: non-blocking writes are implemented for Linux only")
}
