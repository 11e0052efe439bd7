package rtpcodec

// The few NAL unit types the payload formats need (ITU-T H.264 table 7-1,
// H.265 table 7-1). Bitstream parsing beyond the NAL header belongs to
// mediaengine/codec.
const (
	h264NALSlice    = 1
	h264NALIDR      = 5
	h264NALSEI      = 6
	h264NALSPS      = 7
	h264NALPPS      = 8
	h264NALAUD      = 9
	h264NALFiller   = 12
	h264NALSTAPA    = 24
	h264NALSTAPB    = 25
	h264NALMTAP16   = 26
	h264NALMTAP24   = 27
	h264NALFUA      = 28
	h264NALFUB      = 29
	h264NALTypeMask = 0x1f

	h265NALIRAPFirst = 16 // BLA_W_LP
	h265NALIRAPLast  = 23 // RSV_IRAP_VCL23
	h265NALVPS       = 32
	h265NALSPS       = 33
	h265NALPPS       = 34
	h265NALAUD       = 35
	h265NALFiller    = 38
	h265NALAP        = 48
	h265NALFU        = 49
	h265NALPACI      = 50
)

func h264Type(nalu []byte) uint8 { return nalu[0] & h264NALTypeMask }

func h265Type(nalu []byte) uint8 { return (nalu[0] >> 1) & 0x3f }
