package recorder

import (
	"io"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// iovMax is the most buffers one writev(2) takes (IOV_MAX on Linux).
const iovMax = 1024

// vecWriter writes a fragment's slices (fmp4.AppendFragmentVec) to a file
// with one writev(2): the media bytes go from the frames to the kernel
// without a copy into a buffer first, which is most of what the write path
// costs over a bare write of the same bytes.
type vecWriter struct {
	rc  syscall.RawConn
	iov []unix.Iovec
}

func newVecWriter(f *os.File) (*vecWriter, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	return &vecWriter{rc: rc}, nil
}

// write writes bufs in order and answers how many bytes it wrote. bufs'
// elements are consumed (resliced) as they are written.
func (v *vecWriter) write(bufs [][]byte) (int64, error) {
	var total int64
	var werr error
	err := v.rc.Write(func(fd uintptr) bool {
		for werr == nil && len(bufs) > 0 {
			v.iov = v.iov[:0]
			for _, b := range bufs {
				if len(v.iov) == iovMax {
					break
				}
				if len(b) > 0 {
					iov := unix.Iovec{Base: &b[0]}
					iov.SetLen(len(b))
					v.iov = append(v.iov, iov)
				}
			}
			if len(v.iov) == 0 {
				break
			}
			n, _, errno := unix.Syscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&v.iov[0])), uintptr(len(v.iov)))
			switch {
			case errno == unix.EINTR:
				continue
			case errno != 0:
				werr = errno
				continue
			case n == 0:
				werr = io.ErrShortWrite
				continue
			}
			total += int64(n)
			// A short write (a full disk, a signal) goes on where it ended.
			for n > 0 {
				if int(n) < len(bufs[0]) {
					bufs[0] = bufs[0][n:]
					break
				}
				n -= uintptr(len(bufs[0]))
				bufs = bufs[1:]
			}
			for len(bufs) > 0 && len(bufs[0]) == 0 {
				bufs = bufs[1:]
			}
		}
		// The iovecs point into frames: let them go.
		clear(v.iov)
		return true
	})
	if werr != nil {
		return total, &os.PathError{Op: "writev", Err: werr}
	}
	return total, err
}
