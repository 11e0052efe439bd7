package gbrtp

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
)

// FrameReader reads RTP packets framed as RFC 4571 says: each packet
// after a 16-bit big-endian length. Frames may be split across reads in
// any way; zero-length frames carry nothing and are skipped.
type FrameReader struct {
	r   *bufio.Reader
	buf []byte
	hdr [2]byte
	// Empty counts zero-length frames.
	Empty uint64
}

// NewFrameReader reads frames from r.
func NewFrameReader(r io.Reader) *FrameReader {
	return &FrameReader{r: bufio.NewReaderSize(r, 64<<10), buf: make([]byte, 0xffff)}
}

// Next returns the next packet, valid until the following call. It
// returns io.EOF at a clean end between frames and ErrTruncated when the
// connection ends inside one.
func (f *FrameReader) Next() ([]byte, error) {
	for {
		if _, err := io.ReadFull(f.r, f.hdr[:]); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, ErrTruncated
			}
			return nil, err
		}
		n := int(binary.BigEndian.Uint16(f.hdr[:]))
		if n == 0 {
			f.Empty++
			continue
		}
		if _, err := io.ReadFull(f.r, f.buf[:n]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, ErrTruncated
			}
			return nil, err
		}
		return f.buf[:n], nil
	}
}
