package aac

import (
	"errors"
	"fmt"
)

// ADTSHeaderSize is the size of an ADTS header without CRC.
const ADTSHeaderSize = 7

// ErrNoSync is returned when the data does not start with an ADTS syncword.
var ErrNoSync = errors.New("aac: no ADTS syncword")

// ADTS is one parsed ADTS header.
type ADTS struct {
	Config
	// HeaderSize is 7, or 9 with a CRC.
	HeaderSize int
	// FrameSize is the whole frame including the header.
	FrameSize int
}

// ParseADTS parses the header at the start of b.
func ParseADTS(b []byte) (ADTS, error) {
	if len(b) < ADTSHeaderSize {
		return ADTS{}, errors.New("aac: ADTS header shorter than 7 bytes")
	}
	if b[0] != 0xff || b[1]&0xf6 != 0xf0 {
		return ADTS{}, ErrNoSync
	}
	h := ADTS{HeaderSize: 7}
	if b[1]&1 == 0 {
		h.HeaderSize = 9
	}
	h.ObjectType = int(b[2]>>6) + 1
	idx := int(b[2]>>2) & 0xf
	if idx >= len(SampleRates) {
		return ADTS{}, fmt.Errorf("aac: ADTS sampling frequency index %d", idx)
	}
	h.SampleRate = SampleRates[idx]
	h.Channels = int(b[2]&1)<<2 | int(b[3]>>6)
	h.FrameSize = int(b[3]&3)<<11 | int(b[4])<<3 | int(b[5]>>5)
	if h.FrameSize < h.HeaderSize {
		return ADTS{}, fmt.Errorf("aac: ADTS frame length %d is shorter than its header", h.FrameSize)
	}
	return h, nil
}

// SplitADTS splits a run of ADTS frames into raw data blocks (aliasing b)
// and returns the config of the first frame.
func SplitADTS(b []byte) (Config, [][]byte, error) {
	var cfg Config
	var out [][]byte
	for len(b) > 0 {
		h, err := ParseADTS(b)
		if err != nil {
			return cfg, out, err
		}
		if h.FrameSize > len(b) {
			return cfg, out, fmt.Errorf("aac: ADTS frame of %d bytes runs past the data (%d)", h.FrameSize, len(b))
		}
		if len(out) == 0 {
			cfg = h.Config
		}
		out = append(out, b[h.HeaderSize:h.FrameSize])
		b = b[h.FrameSize:]
	}
	return cfg, out, nil
}

// AppendADTS appends a 7-byte ADTS header (no CRC) for a raw data block of
// payloadSize bytes.
func AppendADTS(dst []byte, c Config, payloadSize int) []byte {
	n := payloadSize + ADTSHeaderSize
	idx := rateIndex(c.SampleRate)
	if idx < 0 {
		idx = 4
	}
	profile := c.ObjectType - 1
	if profile < 0 || profile > 3 {
		profile = 1
	}
	return append(dst, 0xff, 0xf1,
		byte(profile<<6|idx<<2|(c.Channels>>2)&1),
		byte((c.Channels&3)<<6|(n>>11)&3),
		byte(n>>3),
		byte((n&7)<<5|0x1f),
		0xfc)
}
