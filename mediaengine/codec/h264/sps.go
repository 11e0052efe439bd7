package h264

import (
	"errors"
	"fmt"

	"github.com/svcplatform/svc/mediaengine/codec/rbsp"
)

// SPS is what the engine reads of a sequence parameter set (H.264 7.3.2.1.1).
type SPS struct {
	ProfileIDC     uint8
	ConstraintSet  uint8 // constraint_set0..5 flags and reserved bits, as in avcC
	LevelIDC       uint8
	ChromaFormat   uint32
	BitDepthLuma   uint32
	BitDepthChroma uint32
	Width, Height  int
	// FrameRate is from the VUI timing info when the encoder wrote it
	// (time_scale / (2 * num_units_in_tick)); 0 when absent.
	FrameRate float64
}

// ErrNotSPS is returned for a NAL unit of another type.
var ErrNotSPS = errors.New("h264: not a sequence parameter set")

// ParseSPS parses a sequence parameter set NAL unit (with its header byte).
func ParseSPS(nalu []byte) (SPS, error) {
	if Type(nalu) != NALSPS || len(nalu) < 4 {
		return SPS{}, ErrNotSPS
	}
	s := SPS{ProfileIDC: nalu[1], ConstraintSet: nalu[2], LevelIDC: nalu[3], ChromaFormat: 1, BitDepthLuma: 8, BitDepthChroma: 8}
	r := rbsp.NewReader(rbsp.Unescape(nalu[4:]))
	if err := s.parse(r); err != nil {
		return SPS{}, fmt.Errorf("h264: SPS: %w", err)
	}
	return s, nil
}

func (s *SPS) parse(r *rbsp.Reader) error {
	r.UE() // seq_parameter_set_id
	switch s.ProfileIDC {
	case 100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135:
		s.ChromaFormat = r.UE()
		if s.ChromaFormat > 3 {
			return fmt.Errorf("chroma_format_idc %d", s.ChromaFormat)
		}
		if s.ChromaFormat == 3 {
			r.Skip(1) // separate_colour_plane_flag
		}
		s.BitDepthLuma, s.BitDepthChroma = r.UE()+8, r.UE()+8
		r.Skip(1)     // qpprime_y_zero_transform_bypass_flag
		if r.Flag() { // seq_scaling_matrix_present_flag
			n := 8
			if s.ChromaFormat == 3 {
				n = 12
			}
			for i := 0; i < n && r.Err() == nil; i++ {
				if r.Flag() {
					size := 16
					if i >= 6 {
						size = 64
					}
					skipScalingList(r, size)
				}
			}
		}
	}
	r.UE() // log2_max_frame_num_minus4
	switch pocType := r.UE(); pocType {
	case 0:
		r.UE()
	case 1:
		r.Skip(1)
		r.SE()
		r.SE()
		n := r.UE()
		if n > 255 {
			return fmt.Errorf("num_ref_frames_in_pic_order_cnt_cycle %d", n)
		}
		for i := uint32(0); i < n; i++ {
			r.SE()
		}
	case 2:
	default:
		return fmt.Errorf("pic_order_cnt_type %d", pocType)
	}
	r.UE()    // max_num_ref_frames
	r.Skip(1) // gaps_in_frame_num_value_allowed_flag
	wMbs, hMapUnits := r.UE(), r.UE()
	frameMbsOnly := r.Flag()
	if !frameMbsOnly {
		r.Skip(1) // mb_adaptive_frame_field_flag
	}
	r.Skip(1) // direct_8x8_inference_flag
	if r.Err() != nil {
		return r.Err()
	}
	if wMbs >= 1024 || hMapUnits >= 1024 {
		return fmt.Errorf("picture of %dx%d macroblocks", wMbs+1, hMapUnits+1)
	}
	fieldFactor := 2
	if frameMbsOnly {
		fieldFactor = 1
	}
	width := int(wMbs+1) * 16
	height := int(hMapUnits+1) * 16 * fieldFactor
	if r.Flag() { // frame_cropping_flag
		left, right, top, bottom := r.UE(), r.UE(), r.UE(), r.UE()
		if r.Err() != nil {
			return r.Err()
		}
		cropX, cropY := 1, fieldFactor
		switch s.ChromaFormat {
		case 1:
			cropX, cropY = 2, 2*fieldFactor
		case 2:
			cropX, cropY = 2, fieldFactor
		}
		width -= cropX * int(left+right)
		height -= cropY * int(top+bottom)
		if width <= 0 || height <= 0 {
			return errors.New("cropping larger than the picture")
		}
	}
	if r.Err() != nil {
		return r.Err()
	}
	s.Width, s.Height = width, height
	if r.Flag() { // vui_parameters_present_flag; a cut-off VUI does not make the size wrong
		s.FrameRate = parseVUITiming(r)
	}
	return nil
}

func skipScalingList(r *rbsp.Reader, size int) {
	last, next := int32(8), int32(8)
	for j := 0; j < size && r.Err() == nil; j++ {
		if next != 0 {
			next = (last + r.SE() + 256) % 256
		}
		if next != 0 {
			last = next
		}
	}
}

// parseVUITiming reads the VUI up to timing_info and returns the frame
// rate, or 0 when the encoder did not write one (or the VUI is cut off).
func parseVUITiming(r *rbsp.Reader) float64 {
	if r.Flag() { // aspect_ratio_info_present_flag
		if r.Bits(8) == 255 { // Extended_SAR
			r.Skip(32)
		}
	}
	if r.Flag() { // overscan_info_present_flag
		r.Skip(1)
	}
	if r.Flag() { // video_signal_type_present_flag
		r.Skip(4)
		if r.Flag() { // colour_description_present_flag
			r.Skip(24)
		}
	}
	if r.Flag() { // chroma_loc_info_present_flag
		r.UE()
		r.UE()
	}
	if !r.Flag() { // timing_info_present_flag
		return 0
	}
	units, scale := r.Bits(32), r.Bits(32)
	if r.Err() != nil || units == 0 {
		return 0
	}
	return float64(scale) / float64(2*units)
}
