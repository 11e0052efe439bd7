// Package nalu converts between the two framings of H.264/H.265 NAL units:
// Annex-B byte streams (start codes, as in MPEG-TS and raw .h264 files) and
// length-prefixed units (AVCC/HVCC, as in FLV and MP4). media.Frame holds
// bare NAL units, so inputs split once and outputs frame once.
package nalu

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// MaxUnits bounds the NAL units one access unit may split into, so hostile
// input cannot make a split allocate without bound.
const MaxUnits = 1024

// Errors of length-prefixed parsing.
var (
	ErrTruncated = errors.New("nalu: length prefix runs past the data")
	ErrTooMany   = fmt.Errorf("nalu: more than %d NAL units in one access unit", MaxUnits)
)

// SplitAnnexB splits an Annex-B byte stream into NAL units without start
// codes. The units alias b. Leading garbage before the first start code is
// treated as a unit only when b has no start code at all (a bare NAL unit),
// and trailing zero bytes of a unit (trailing_zero_8bits) are dropped.
func SplitAnnexB(b []byte) ([][]byte, error) {
	var out [][]byte
	start := -1
	i := 0
	for i+2 < len(b) {
		if b[i] == 0 && b[i+1] == 0 && b[i+2] == 1 {
			if start >= 0 {
				if u := trimZeros(b[start:i]); len(u) > 0 {
					if len(out) == MaxUnits {
						return nil, ErrTooMany
					}
					out = append(out, u)
				}
			}
			i += 3
			start = i
			continue
		}
		i++
	}
	if start < 0 {
		if len(b) == 0 {
			return nil, nil
		}
		return [][]byte{b}, nil
	}
	if u := trimZeros(b[start:]); len(u) > 0 {
		if len(out) == MaxUnits {
			return nil, ErrTooMany
		}
		out = append(out, u)
	}
	return out, nil
}

func trimZeros(u []byte) []byte {
	for len(u) > 0 && u[len(u)-1] == 0 {
		u = u[:len(u)-1]
	}
	return u
}

// AppendAnnexB appends units with 4-byte start codes.
func AppendAnnexB(dst []byte, units [][]byte) []byte {
	for _, u := range units {
		dst = append(dst, 0, 0, 0, 1)
		dst = append(dst, u...)
	}
	return dst
}

// AppendLengthPrefixed appends units each behind a 4-byte big-endian length,
// the framing of FLV and MP4 samples (lengthSizeMinusOne = 3).
func AppendLengthPrefixed(dst []byte, units [][]byte) []byte {
	for _, u := range units {
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(u)))
		dst = append(dst, u...)
	}
	return dst
}

// LengthPrefixedSize is the size AppendLengthPrefixed adds.
func LengthPrefixedSize(units [][]byte) int {
	n := 0
	for _, u := range units {
		n += 4 + len(u)
	}
	return n
}

// SplitLengthPrefixed splits units framed by lengthSize-byte (1, 2 or 4)
// big-endian lengths. The units alias b.
func SplitLengthPrefixed(b []byte, lengthSize int) ([][]byte, error) {
	if lengthSize != 1 && lengthSize != 2 && lengthSize != 4 {
		return nil, fmt.Errorf("nalu: length size %d is not 1, 2 or 4", lengthSize)
	}
	var out [][]byte
	for len(b) > 0 {
		if len(b) < lengthSize {
			return nil, ErrTruncated
		}
		var n int
		switch lengthSize {
		case 1:
			n = int(b[0])
		case 2:
			n = int(binary.BigEndian.Uint16(b))
		default:
			n = int(binary.BigEndian.Uint32(b))
		}
		b = b[lengthSize:]
		if n > len(b) || n < 0 {
			return nil, ErrTruncated
		}
		if len(out) == MaxUnits {
			return nil, ErrTooMany
		}
		if n > 0 {
			out = append(out, b[:n])
		}
		b = b[n:]
	}
	return out, nil
}
