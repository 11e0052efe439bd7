package flv

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxTagSize bounds a tag body the Reader accepts, so a hostile length
// cannot make it allocate without bound.
const MaxTagSize = 8 << 20

// Tag is one FLV tag; Data aliases the Reader's buffer until the next
// call.
type Tag struct {
	Type      byte
	Timestamp uint32 // milliseconds, with the extended byte
	Data      []byte
}

// Reader reads an FLV stream tag by tag, checking each PreviousTagSize.
// Tests and the fan-out benchmark use it to check what players receive.
type Reader struct {
	r       *bufio.Reader
	buf     []byte
	hdr     [TagHeaderSize]byte
	started bool
	// HasAudio and HasVideo are the header's flags.
	HasAudio, HasVideo bool
}

// NewReader reads from r.
func NewReader(r io.Reader) *Reader { return &Reader{r: bufio.NewReaderSize(r, 64<<10)} }

// ErrNotFLV is returned when the stream does not start with an FLV header.
var ErrNotFLV = errors.New("flv: no FLV header")

func (r *Reader) readHeader() error {
	var h [13]byte
	if _, err := io.ReadFull(r.r, h[:]); err != nil {
		return err
	}
	if h[0] != 'F' || h[1] != 'L' || h[2] != 'V' {
		return ErrNotFLV
	}
	off := binary.BigEndian.Uint32(h[5:])
	if off != 9 {
		return fmt.Errorf("flv: header size %d, want 9", off)
	}
	r.HasAudio, r.HasVideo = h[4]&4 != 0, h[4]&1 != 0
	return nil
}

// Next reads the next tag.
func (r *Reader) Next() (Tag, error) {
	if !r.started {
		if err := r.readHeader(); err != nil {
			return Tag{}, err
		}
		r.started = true
	}
	if _, err := io.ReadFull(r.r, r.hdr[:]); err != nil {
		return Tag{}, err
	}
	size := int(r.hdr[1])<<16 | int(r.hdr[2])<<8 | int(r.hdr[3])
	if size > MaxTagSize {
		return Tag{}, fmt.Errorf("flv: tag of %d bytes exceeds %d", size, MaxTagSize)
	}
	if cap(r.buf) < size+4 {
		r.buf = make([]byte, size+4)
	}
	b := r.buf[:size+4]
	if _, err := io.ReadFull(r.r, b); err != nil {
		return Tag{}, err
	}
	if prev := binary.BigEndian.Uint32(b[size:]); prev != uint32(TagHeaderSize+size) {
		return Tag{}, fmt.Errorf("flv: PreviousTagSize %d after a tag of %d bytes", prev, TagHeaderSize+size)
	}
	ts := uint32(r.hdr[4])<<16 | uint32(r.hdr[5])<<8 | uint32(r.hdr[6]) | uint32(r.hdr[7])<<24
	return Tag{Type: r.hdr[0] & 0x1f, Timestamp: ts, Data: b[:size]}, nil
}

// VideoInfo reads a video tag's header: whether it is a keyframe and
// whether it is a sequence header rather than a coded frame.
func VideoInfo(data []byte) (keyframe, sequenceHeader bool, err error) {
	if len(data) < 2 {
		return false, false, errors.New("flv: video tag too short")
	}
	keyframe = (data[0]>>4)&7 == 1
	if data[0]&0x80 != 0 { // Enhanced FLV
		return keyframe, data[0]&0x0f == 0, nil
	}
	return keyframe, data[1] == 0, nil
}
