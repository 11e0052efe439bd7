// Package h265 reads and writes what containers need of H.265/HEVC (ITU-T
// H.265): NAL unit types, the sequence parameter set (coded size, profile,
// tier, level) and the HEVCDecoderConfigurationRecord of MP4 and Enhanced
// FLV (ISO/IEC 14496-15 8.3.3).
package h265

// NALType is nal_unit_type (H.265 Table 7-1).
type NALType uint8

const (
	NALTrailR    NALType = 1
	NALBLAWLP    NALType = 16
	NALIDRWRADL  NALType = 19
	NALIDRNLP    NALType = 20
	NALCRA       NALType = 21
	NALVPS       NALType = 32
	NALSPS       NALType = 33
	NALPPS       NALType = 34
	NALAUD       NALType = 35
	NALPrefixSEI NALType = 39
	NALSuffixSEI NALType = 40
	NALAP        NALType = 48 // RTP aggregation (RFC 7798), never in a Frame
	NALFU        NALType = 49 // RTP fragmentation (RFC 7798), never in a Frame
)

// Type is the type of a NAL unit without start code; 0 for a short unit.
func Type(nalu []byte) NALType {
	if len(nalu) < 2 {
		return 0
	}
	return NALType(nalu[0]>>1) & 0x3f
}

// IsIRAP reports whether t is an intra random access point (BLA, IDR, CRA),
// where a decoder can start.
func IsIRAP(t NALType) bool { return t >= NALBLAWLP && t <= 23 }

// IsKeyframe reports whether an access unit holds an IRAP picture.
func IsKeyframe(units [][]byte) bool {
	for _, u := range units {
		if IsIRAP(Type(u)) {
			return true
		}
	}
	return false
}

// ParamSets returns the last VPS, SPS and PPS among units.
func ParamSets(units [][]byte) (vps, sps, pps []byte) {
	for _, u := range units {
		switch Type(u) {
		case NALVPS:
			vps = u
		case NALSPS:
			sps = u
		case NALPPS:
			pps = u
		}
	}
	return vps, sps, pps
}
