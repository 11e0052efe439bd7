package fmp4

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Box is one parsed box; Data is its content after the header and aliases
// the input.
type Box struct {
	Type     string
	Offset   int
	Size     int
	Data     []byte
	Children []Box
}

// Limits of ReadBoxes, so hostile input cannot recurse or allocate without
// bound.
const (
	maxDepth = 10
	maxBoxes = 100000
)

// ErrBox is returned for a malformed box.
var ErrBox = errors.New("fmp4: malformed box")

// containers are the boxes whose content is more boxes.
var containers = map[string]bool{"moov": true, "trak": true, "mdia": true, "minf": true, "stbl": true, "mvex": true,
	"moof": true, "traf": true, "dinf": true, "edts": true, "udta": true, "mfra": true}

// ReadBoxes parses b into boxes, descending into container boxes.
func ReadBoxes(b []byte) ([]Box, error) {
	n := 0
	return readBoxes(b, 0, 0, &n)
}

func readBoxes(b []byte, base, depth int, count *int) ([]Box, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%w: nested deeper than %d", ErrBox, maxDepth)
	}
	var out []Box
	off := 0
	for off < len(b) {
		if len(b)-off < 8 {
			return nil, fmt.Errorf("%w: %d bytes left at offset %d, less than a box header", ErrBox, len(b)-off, base+off)
		}
		*count++
		if *count > maxBoxes {
			return nil, fmt.Errorf("%w: more than %d boxes", ErrBox, maxBoxes)
		}
		size := uint64(binary.BigEndian.Uint32(b[off:]))
		typ := string(b[off+4 : off+8])
		hdr := 8
		switch size {
		case 0:
			size = uint64(len(b) - off)
		case 1:
			if len(b)-off < 16 {
				return nil, fmt.Errorf("%w: truncated largesize of %q", ErrBox, typ)
			}
			size = binary.BigEndian.Uint64(b[off+8:])
			hdr = 16
		}
		if size < uint64(hdr) || size > uint64(len(b)-off) {
			return nil, fmt.Errorf("%w: %q at offset %d claims %d bytes, %d remain", ErrBox, typ, base+off, size, len(b)-off)
		}
		box := Box{Type: typ, Offset: base + off, Size: int(size), Data: b[off+hdr : off+int(size)]}
		if containers[typ] {
			children, err := readBoxes(box.Data, base+off+hdr, depth+1, count)
			if err != nil {
				return nil, err
			}
			box.Children = children
		}
		out = append(out, box)
		off += int(size)
	}
	return out, nil
}

// Find returns the first box along a path of types, like "moof/traf/trun".
func Find(boxes []Box, path ...string) *Box {
	for i := range boxes {
		if boxes[i].Type != path[0] {
			continue
		}
		if len(path) == 1 {
			return &boxes[i]
		}
		if b := Find(boxes[i].Children, path[1:]...); b != nil {
			return b
		}
	}
	return nil
}

// TrunSample is one sample of a parsed trun.
type TrunSample struct {
	Duration, Size, Flags uint32
	CTS                   int32
}

// ParseTrun parses a trun box's content.
func ParseTrun(d []byte) (dataOffset int32, samples []TrunSample, err error) {
	if len(d) < 8 {
		return 0, nil, fmt.Errorf("%w: trun too short", ErrBox)
	}
	flags := binary.BigEndian.Uint32(d) & 0xffffff
	count := binary.BigEndian.Uint32(d[4:])
	p := d[8:]
	take := func() (uint32, bool) {
		if len(p) < 4 {
			return 0, false
		}
		v := binary.BigEndian.Uint32(p)
		p = p[4:]
		return v, true
	}
	if flags&trunDataOffset != 0 {
		v, ok := take()
		if !ok {
			return 0, nil, fmt.Errorf("%w: trun data offset", ErrBox)
		}
		dataOffset = int32(v)
	}
	if flags&0x4 != 0 { // first-sample-flags
		if _, ok := take(); !ok {
			return 0, nil, fmt.Errorf("%w: trun first sample flags", ErrBox)
		}
	}
	per := 0
	for _, f := range []uint32{trunDuration, trunSize, trunFlags, trunCTS} {
		if flags&f != 0 {
			per += 4
		}
	}
	if per > 0 && uint64(count)*uint64(per) > uint64(len(p)) {
		return 0, nil, fmt.Errorf("%w: trun claims %d samples in %d bytes", ErrBox, count, len(p))
	}
	if per == 0 && count > maxBoxes {
		return 0, nil, fmt.Errorf("%w: trun claims %d samples", ErrBox, count)
	}
	samples = make([]TrunSample, count)
	for i := range samples {
		s := &samples[i]
		if flags&trunDuration != 0 {
			s.Duration, _ = take()
		}
		if flags&trunSize != 0 {
			s.Size, _ = take()
		}
		if flags&trunFlags != 0 {
			s.Flags, _ = take()
		}
		if flags&trunCTS != 0 {
			v, _ := take()
			s.CTS = int32(v)
		}
	}
	return dataOffset, samples, nil
}

// ParseTfdt returns a tfdt box's baseMediaDecodeTime.
func ParseTfdt(d []byte) (uint64, error) {
	if len(d) >= 12 && d[0] == 1 {
		return binary.BigEndian.Uint64(d[4:]), nil
	}
	if len(d) >= 8 && d[0] == 0 {
		return uint64(binary.BigEndian.Uint32(d[4:])), nil
	}
	return 0, fmt.Errorf("%w: tfdt", ErrBox)
}
