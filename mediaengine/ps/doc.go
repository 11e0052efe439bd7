// Package ps reads the MPEG program stream (ISO/IEC 13818-1 2.5) that
// GB/T 28181 devices send over RTP: pack headers, the system header, the
// program stream map when a device sends one, and PES packets, reassembled
// into elementary-stream access units (Demuxer) and turned into the
// engine's tracks and frames (FrameBuilder) for H.264, H.265, AAC and
// G.711.
//
// The input is hostile network bytes: a PES packet is at most 64 KiB by
// its length field, an access unit is bounded by MaxUnitSize, and bytes
// that are not a start code are skipped to the next one (counted as a
// resync) rather than failing the stream, because one lost RTP packet in
// the middle of a PES must cost that access unit, not the session.
package ps
