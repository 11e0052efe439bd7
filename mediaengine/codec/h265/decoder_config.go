package h265

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strings"
)

// DecoderConfig is the HEVCDecoderConfigurationRecord (ISO/IEC 14496-15
// 8.3.3.1.2), the hvcC box of MP4 and the sequence start of Enhanced FLV.
type DecoderConfig struct {
	PTL             ProfileTierLevel
	ChromaFormat    uint8
	BitDepthLuma    uint8
	BitDepthChroma  uint8
	NumTemporal     uint8
	TemporalNesting bool
	// LengthSize is the NAL length prefix size in bytes (1, 2 or 4).
	LengthSize    int
	VPS, SPS, PPS [][]byte
}

// NewDecoderConfig builds the record from one VPS, SPS and PPS.
func NewDecoderConfig(vps, sps, pps []byte) (DecoderConfig, error) {
	if len(vps) == 0 || len(pps) == 0 {
		return DecoderConfig{}, errors.New("h265: decoder config needs a VPS, an SPS and a PPS")
	}
	s, err := ParseSPS(sps)
	if err != nil {
		return DecoderConfig{}, err
	}
	return DecoderConfig{PTL: s.PTL, ChromaFormat: uint8(s.ChromaFormat), BitDepthLuma: uint8(s.BitDepthLuma),
		BitDepthChroma: uint8(s.BitDepthChroma), NumTemporal: s.MaxSubLayers, TemporalNesting: s.TemporalNesting,
		LengthSize: 4, VPS: [][]byte{vps}, SPS: [][]byte{sps}, PPS: [][]byte{pps}}, nil
}

const recordHeader = 23

// Marshal encodes the record.
func (c DecoderConfig) Marshal() []byte {
	b := make([]byte, recordHeader, recordHeader+64)
	b[0] = 1
	b[1] = c.PTL.ProfileSpace<<6 | c.PTL.Tier<<5 | c.PTL.ProfileIDC&0x1f
	binary.BigEndian.PutUint32(b[2:], c.PTL.Compat)
	copy(b[6:12], c.PTL.Constraints[:])
	b[12] = c.PTL.LevelIDC
	b[13], b[14] = 0xf0, 0x00 // min_spatial_segmentation_idc 0
	b[15] = 0xfc              // parallelismType 0
	b[16] = 0xfc | c.ChromaFormat&3
	b[17] = 0xf8 | (c.BitDepthLuma-8)&7
	b[18] = 0xf8 | (c.BitDepthChroma-8)&7
	// avgFrameRate 0 (unknown), constantFrameRate 0.
	nesting := byte(0)
	if c.TemporalNesting {
		nesting = 1
	}
	b[21] = (c.NumTemporal&7)<<3 | nesting<<2 | byte(c.LengthSize-1)&3
	arrays := []struct {
		t     NALType
		units [][]byte
	}{{NALVPS, c.VPS}, {NALSPS, c.SPS}, {NALPPS, c.PPS}}
	for _, a := range arrays {
		if len(a.units) > 0 {
			b[22]++
		}
	}
	for _, a := range arrays {
		if len(a.units) == 0 {
			continue
		}
		b = append(b, 0x80|byte(a.t)) // array_completeness = 1
		b = binary.BigEndian.AppendUint16(b, uint16(len(a.units)))
		for _, u := range a.units {
			b = binary.BigEndian.AppendUint16(b, uint16(len(u)))
			b = append(b, u...)
		}
	}
	return b
}

// ParseDecoderConfig decodes a record; the parameter sets alias b.
func ParseDecoderConfig(b []byte) (DecoderConfig, error) {
	if len(b) < recordHeader || b[0] != 1 {
		return DecoderConfig{}, errors.New("h265: not an HEVCDecoderConfigurationRecord version 1")
	}
	var c DecoderConfig
	c.PTL = ProfileTierLevel{ProfileSpace: b[1] >> 6, Tier: (b[1] >> 5) & 1, ProfileIDC: b[1] & 0x1f,
		Compat: binary.BigEndian.Uint32(b[2:]), LevelIDC: b[12]}
	copy(c.PTL.Constraints[:], b[6:12])
	c.ChromaFormat, c.BitDepthLuma, c.BitDepthChroma = b[16]&3, b[17]&7+8, b[18]&7+8
	c.NumTemporal, c.TemporalNesting, c.LengthSize = (b[21]>>3)&7, b[21]&4 != 0, int(b[21]&3)+1
	if c.LengthSize == 3 {
		return DecoderConfig{}, errors.New("h265: NAL length size 3 is not allowed")
	}
	rest := b[recordHeader:]
	for i := 0; i < int(b[22]); i++ {
		if len(rest) < 3 {
			return DecoderConfig{}, fmt.Errorf("h265: decoder config ends inside array %d", i)
		}
		t, n := NALType(rest[0]&0x3f), int(binary.BigEndian.Uint16(rest[1:]))
		rest = rest[3:]
		for j := 0; j < n; j++ {
			if len(rest) < 2 {
				return DecoderConfig{}, fmt.Errorf("h265: decoder config ends inside array %d", i)
			}
			l := int(binary.BigEndian.Uint16(rest))
			if len(rest) < 2+l {
				return DecoderConfig{}, fmt.Errorf("h265: NAL unit of array %d runs past the record", i)
			}
			u := rest[2 : 2+l]
			rest = rest[2+l:]
			switch t {
			case NALVPS:
				c.VPS = append(c.VPS, u)
			case NALSPS:
				c.SPS = append(c.SPS, u)
			case NALPPS:
				c.PPS = append(c.PPS, u)
			}
		}
	}
	return c, nil
}

// Codec is the RFC 6381 / ISO/IEC 14496-15 Annex E codecs string
// (hvc1.<space><profile>.<compat>.<tier><level>.<constraints>) for HLS.
func (c DecoderConfig) Codec() string {
	var sb strings.Builder
	sb.WriteString("hvc1.")
	if c.PTL.ProfileSpace > 0 {
		sb.WriteByte("ABC"[c.PTL.ProfileSpace-1])
	}
	fmt.Fprintf(&sb, "%d.%X.", c.PTL.ProfileIDC, bits.Reverse32(c.PTL.Compat))
	if c.PTL.Tier == 1 {
		sb.WriteByte('H')
	} else {
		sb.WriteByte('L')
	}
	fmt.Fprintf(&sb, "%d", c.PTL.LevelIDC)
	last := 0
	for i, v := range c.PTL.Constraints {
		if v != 0 {
			last = i + 1
		}
	}
	for _, v := range c.PTL.Constraints[:last] {
		fmt.Fprintf(&sb, ".%X", v)
	}
	return sb.String()
}
