package h264

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// DecoderConfig is the AVCDecoderConfigurationRecord (ISO/IEC 14496-15
// 5.3.3.1), the avcC box of MP4 and the sequence header of FLV. The engine
// always writes 4-byte NAL lengths.
type DecoderConfig struct {
	Profile       uint8
	Compatibility uint8
	Level         uint8
	// LengthSize is the NAL length prefix size in bytes (1, 2 or 4).
	LengthSize int
	SPS, PPS   [][]byte
}

// NewDecoderConfig builds the record for one SPS and one PPS.
func NewDecoderConfig(sps, pps []byte) (DecoderConfig, error) {
	if len(sps) < 4 || len(pps) == 0 {
		return DecoderConfig{}, errors.New("h264: decoder config needs an SPS and a PPS")
	}
	return DecoderConfig{Profile: sps[1], Compatibility: sps[2], Level: sps[3], LengthSize: 4,
		SPS: [][]byte{sps}, PPS: [][]byte{pps}}, nil
}

// Marshal encodes the record.
func (c DecoderConfig) Marshal() []byte {
	b := []byte{1, c.Profile, c.Compatibility, c.Level, 0xfc | byte(c.LengthSize-1)&3, 0xe0 | byte(len(c.SPS))&0x1f}
	for _, s := range c.SPS {
		b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
		b = append(b, s...)
	}
	b = append(b, byte(len(c.PPS)))
	for _, p := range c.PPS {
		b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
		b = append(b, p...)
	}
	return b
}

// ParseDecoderConfig decodes a record; the parameter sets alias b.
func ParseDecoderConfig(b []byte) (DecoderConfig, error) {
	if len(b) < 7 || b[0] != 1 {
		return DecoderConfig{}, errors.New("h264: not an AVCDecoderConfigurationRecord version 1")
	}
	c := DecoderConfig{Profile: b[1], Compatibility: b[2], Level: b[3], LengthSize: int(b[4]&3) + 1}
	if c.LengthSize == 3 {
		return DecoderConfig{}, errors.New("h264: NAL length size 3 is not allowed")
	}
	n := int(b[5] & 0x1f)
	rest := b[6:]
	var err error
	if c.SPS, rest, err = readSets(rest, n); err != nil {
		return DecoderConfig{}, err
	}
	if len(rest) < 1 {
		return DecoderConfig{}, errors.New("h264: decoder config ends before the PPS count")
	}
	if c.PPS, _, err = readSets(rest[1:], int(rest[0])); err != nil {
		return DecoderConfig{}, err
	}
	return c, nil
}

func readSets(b []byte, n int) ([][]byte, []byte, error) {
	out := make([][]byte, 0, n)
	for i := 0; i < n; i++ {
		if len(b) < 2 {
			return nil, nil, fmt.Errorf("h264: decoder config ends inside parameter set %d", i)
		}
		l := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+l {
			return nil, nil, fmt.Errorf("h264: parameter set %d runs past the record", i)
		}
		out = append(out, b[2:2+l])
		b = b[2+l:]
	}
	return out, b, nil
}

// Codec is the RFC 6381 codecs string (avc1.PPCCLL) for HLS playlists.
func (c DecoderConfig) Codec() string {
	return fmt.Sprintf("avc1.%02X%02X%02X", c.Profile, c.Compatibility, c.Level)
}
