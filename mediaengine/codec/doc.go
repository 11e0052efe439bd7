// Package codec groups the bitstream helpers of the codecs the engine
// carries: NAL unit framing (nalu), the exp-Golomb reader of parameter sets
// (rbsp), per codec the parameter sets and decoder configuration records
// that containers need (h264, h265, aac), and a VP8 frame's keyframe flag
// and size (vp8). Inputs and outputs share them, so a stream is described
// the same way whichever protocol it came in on.
package codec
