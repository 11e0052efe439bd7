//go:build linux

package httpmedia

import (
	"syscall"
	"unsafe"
)

// iovMax is the kernel's limit on buffers per writev.
const iovMax = 1024

// writeNow writes bufs with one non-blocking writev and returns how many
// bytes the socket took: 0 with no error when its buffer is full. It
// bypasses the runtime's poller on purpose: a write shard must never wait
// for one player.
func writeNow(raw syscall.RawConn, iov []syscall.Iovec, bufs [][]byte) (int, []syscall.Iovec, error) {
	iov = iov[:0]
	for _, b := range bufs {
		if len(b) == 0 {
			continue
		}
		if len(iov) == iovMax {
			break
		}
		v := syscall.Iovec{Base: &b[0]}
		v.SetLen(len(b))
		iov = append(iov, v)
	}
	if len(iov) == 0 {
		return 0, iov, nil
	}
	var n uintptr
	var errno syscall.Errno
	err := raw.Write(func(fd uintptr) bool {
		n, _, errno = syscall.Syscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
		return true
	})
	if err != nil {
		return 0, iov, err
	}
	switch errno {
	case 0:
		return int(n), iov, nil
	case syscall.EAGAIN, syscall.EINTR:
		return 0, iov, nil
	}
	return 0, iov, errno
}
