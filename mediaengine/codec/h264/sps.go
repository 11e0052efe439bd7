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
	if _, err := r.UE(); err != nil { // seq_parameter_set_id
		return err
	}
	switch s.ProfileIDC {
	case 100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135:
		cf, err := r.UE()
		if err != nil {
			return err
		}
		if cf > 3 {
			return fmt.Errorf("chroma_format_idc %d", cf)
		}
		s.ChromaFormat = cf
		if cf == 3 {
			if err := r.Skip(1); err != nil { // separate_colour_plane_flag
				return err
			}
		}
		bl, err := r.UE()
		if err != nil {
			return err
		}
		bc, err := r.UE()
		if err != nil {
			return err
		}
		s.BitDepthLuma, s.BitDepthChroma = bl+8, bc+8
		if err := r.Skip(1); err != nil { // qpprime_y_zero_transform_bypass_flag
			return err
		}
		present, err := r.Flag()
		if err != nil {
			return err
		}
		if present {
			n := 8
			if cf == 3 {
				n = 12
			}
			for i := 0; i < n; i++ {
				listPresent, err := r.Flag()
				if err != nil {
					return err
				}
				if listPresent {
					size := 16
					if i >= 6 {
						size = 64
					}
					if err := skipScalingList(r, size); err != nil {
						return err
					}
				}
			}
		}
	}
	if _, err := r.UE(); err != nil { // log2_max_frame_num_minus4
		return err
	}
	pocType, err := r.UE()
	if err != nil {
		return err
	}
	switch pocType {
	case 0:
		if _, err := r.UE(); err != nil {
			return err
		}
	case 1:
		if err := r.Skip(1); err != nil {
			return err
		}
		for i := 0; i < 2; i++ {
			if _, err := r.SE(); err != nil {
				return err
			}
		}
		n, err := r.UE()
		if err != nil {
			return err
		}
		if n > 255 {
			return fmt.Errorf("num_ref_frames_in_pic_order_cnt_cycle %d", n)
		}
		for i := uint32(0); i < n; i++ {
			if _, err := r.SE(); err != nil {
				return err
			}
		}
	case 2:
	default:
		return fmt.Errorf("pic_order_cnt_type %d", pocType)
	}
	if _, err := r.UE(); err != nil { // max_num_ref_frames
		return err
	}
	if err := r.Skip(1); err != nil { // gaps_in_frame_num_value_allowed_flag
		return err
	}
	wMbs, err := r.UE()
	if err != nil {
		return err
	}
	hMapUnits, err := r.UE()
	if err != nil {
		return err
	}
	frameMbsOnly, err := r.Flag()
	if err != nil {
		return err
	}
	if !frameMbsOnly {
		if err := r.Skip(1); err != nil { // mb_adaptive_frame_field_flag
			return err
		}
	}
	if err := r.Skip(1); err != nil { // direct_8x8_inference_flag
		return err
	}
	if wMbs > 1024 || hMapUnits > 1024 {
		return fmt.Errorf("picture of %dx%d macroblocks", wMbs+1, hMapUnits+1)
	}
	fieldFactor := 2
	if frameMbsOnly {
		fieldFactor = 1
	}
	width := int(wMbs+1) * 16
	height := int(hMapUnits+1) * 16 * fieldFactor
	cropping, err := r.Flag()
	if err != nil {
		return err
	}
	if cropping {
		var c [4]uint32
		for i := range c {
			if c[i], err = r.UE(); err != nil {
				return err
			}
		}
		cropX, cropY := 1, fieldFactor
		switch s.ChromaFormat {
		case 1:
			cropX, cropY = 2, 2*fieldFactor
		case 2:
			cropX, cropY = 2, fieldFactor
		}
		width -= cropX * int(c[0]+c[1])
		height -= cropY * int(c[2]+c[3])
		if width <= 0 || height <= 0 {
			return errors.New("cropping larger than the picture")
		}
	}
	s.Width, s.Height = width, height
	vui, err := r.Flag()
	if err != nil || !vui {
		return nil // a cut-off VUI does not make the size wrong
	}
	s.FrameRate = parseVUITiming(r)
	return nil
}

func skipScalingList(r *rbsp.Reader, size int) error {
	last, next := int32(8), int32(8)
	for j := 0; j < size; j++ {
		if next != 0 {
			d, err := r.SE()
			if err != nil {
				return err
			}
			next = (last + d + 256) % 256
		}
		if next != 0 {
			last = next
		}
	}
	return nil
}

// parseVUITiming reads the VUI up to timing_info and returns the frame
// rate, or 0 when the encoder did not write one.
func parseVUITiming(r *rbsp.Reader) float64 {
	if f, err := r.Flag(); err != nil { // aspect_ratio_info_present_flag
		return 0
	} else if f {
		idc, err := r.Bits(8)
		if err != nil {
			return 0
		}
		if idc == 255 && r.Skip(32) != nil { // Extended_SAR
			return 0
		}
	}
	if f, err := r.Flag(); err != nil { // overscan_info_present_flag
		return 0
	} else if f && r.Skip(1) != nil {
		return 0
	}
	if f, err := r.Flag(); err != nil { // video_signal_type_present_flag
		return 0
	} else if f {
		if r.Skip(4) != nil {
			return 0
		}
		if c, err := r.Flag(); err != nil || (c && r.Skip(24) != nil) {
			return 0
		}
	}
	if f, err := r.Flag(); err != nil { // chroma_loc_info_present_flag
		return 0
	} else if f {
		if _, err := r.UE(); err != nil {
			return 0
		}
		if _, err := r.UE(); err != nil {
			return 0
		}
	}
	timing, err := r.Flag()
	if err != nil || !timing {
		return 0
	}
	units, err1 := r.Bits(32)
	scale, err2 := r.Bits(32)
	if err1 != nil || err2 != nil || units == 0 {
		return 0
	}
	return float64(scale) / float64(2*units)
}
