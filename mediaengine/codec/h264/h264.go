// Package h264 reads and writes what containers need of H.264 (ITU-T
// H.264): NAL unit types, the sequence parameter set (coded size, profile,
// level, frame rate) and the AVCDecoderConfigurationRecord of FLV and MP4
// (ISO/IEC 14496-15 5.3.3).
package h264

// NALType is nal_unit_type (H.264 Table 7-1).
type NALType uint8

const (
	NALSlice    NALType = 1
	NALIDR      NALType = 5
	NALSEI      NALType = 6
	NALSPS      NALType = 7
	NALPPS      NALType = 8
	NALAUD      NALType = 9
	NALFiller   NALType = 12
	NALSTAPA    NALType = 24 // RTP aggregation (RFC 6184), never in a Frame
	NALFUA      NALType = 28 // RTP fragmentation (RFC 6184), never in a Frame
	nalTypeMask         = 0x1f
)

// Type is the type of a NAL unit without start code; 0 for an empty unit.
func Type(nalu []byte) NALType {
	if len(nalu) == 0 {
		return 0
	}
	return NALType(nalu[0] & nalTypeMask)
}

// IsKeyframe reports whether an access unit holds an IDR slice.
func IsKeyframe(units [][]byte) bool {
	for _, u := range units {
		if Type(u) == NALIDR {
			return true
		}
	}
	return false
}

// ParamSets returns the last SPS and PPS among units, nil when absent.
func ParamSets(units [][]byte) (sps, pps []byte) {
	for _, u := range units {
		switch Type(u) {
		case NALSPS:
			sps = u
		case NALPPS:
			pps = u
		}
	}
	return sps, pps
}
