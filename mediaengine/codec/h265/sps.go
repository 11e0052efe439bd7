package h265

import (
	"errors"
	"fmt"

	"github.com/svcplatform/svc/mediaengine/codec/rbsp"
)

// ProfileTierLevel is the general part of profile_tier_level (H.265 7.3.3),
// the fields the decoder configuration record and codec strings repeat.
type ProfileTierLevel struct {
	ProfileSpace uint8
	Tier         uint8
	ProfileIDC   uint8
	Compat       uint32
	Constraints  [6]byte
	LevelIDC     uint8
}

// SPS is what the engine reads of a sequence parameter set (H.265 7.3.2.2).
type SPS struct {
	PTL             ProfileTierLevel
	MaxSubLayers    uint8
	TemporalNesting bool
	ChromaFormat    uint32
	BitDepthLuma    uint32
	BitDepthChroma  uint32
	Width, Height   int
}

// ErrNotSPS is returned for a NAL unit of another type.
var ErrNotSPS = errors.New("h265: not a sequence parameter set")

// ParseSPS parses a sequence parameter set NAL unit (with its two header
// bytes).
func ParseSPS(nalu []byte) (SPS, error) {
	if Type(nalu) != NALSPS {
		return SPS{}, ErrNotSPS
	}
	b := rbsp.Unescape(nalu[2:])
	if len(b) < 13 {
		return SPS{}, errors.New("h265: SPS shorter than its profile_tier_level")
	}
	var s SPS
	s.MaxSubLayers = (b[0]>>1)&7 + 1
	s.TemporalNesting = b[0]&1 == 1
	s.PTL = parsePTL(b[1:13])
	r := rbsp.NewReader(b[13:])
	if err := s.parse(r); err != nil {
		return SPS{}, fmt.Errorf("h265: SPS: %w", err)
	}
	return s, nil
}

func parsePTL(b []byte) ProfileTierLevel {
	p := ProfileTierLevel{ProfileSpace: b[0] >> 6, Tier: (b[0] >> 5) & 1, ProfileIDC: b[0] & 0x1f,
		Compat: uint32(b[1])<<24 | uint32(b[2])<<16 | uint32(b[3])<<8 | uint32(b[4]), LevelIDC: b[11]}
	copy(p.Constraints[:], b[5:11])
	return p
}

func (s *SPS) parse(r *rbsp.Reader) error {
	subLayers := int(s.MaxSubLayers) - 1
	profilePresent := make([]bool, subLayers)
	levelPresent := make([]bool, subLayers)
	for i := 0; i < subLayers; i++ {
		profilePresent[i], levelPresent[i] = r.Flag(), r.Flag()
	}
	if subLayers > 0 {
		r.Skip(2 * (8 - subLayers))
	}
	for i := 0; i < subLayers; i++ {
		if profilePresent[i] {
			r.Skip(88)
		}
		if levelPresent[i] {
			r.Skip(8)
		}
	}
	r.UE() // sps_seq_parameter_set_id
	cf := r.UE()
	if cf > 3 {
		return fmt.Errorf("chroma_format_idc %d", cf)
	}
	s.ChromaFormat = cf
	if cf == 3 {
		r.Skip(1) // separate_colour_plane_flag
	}
	w, h := r.UE(), r.UE()
	if r.Err() != nil {
		return r.Err()
	}
	if w == 0 || h == 0 || w > 16888 || h > 16888 {
		return fmt.Errorf("picture of %dx%d samples", w, h)
	}
	width, height := int(w), int(h)
	if r.Flag() { // conformance_window_flag
		left, right, top, bottom := r.UE(), r.UE(), r.UE(), r.UE()
		subW, subH := 1, 1
		switch cf {
		case 1:
			subW, subH = 2, 2
		case 2:
			subW = 2
		}
		width -= subW * int(left+right)
		height -= subH * int(top+bottom)
		if r.Err() == nil && (width <= 0 || height <= 0) {
			return errors.New("conformance window larger than the picture")
		}
	}
	s.BitDepthLuma, s.BitDepthChroma = r.UE()+8, r.UE()+8
	if r.Err() != nil {
		return r.Err()
	}
	s.Width, s.Height = width, height
	return nil
}
