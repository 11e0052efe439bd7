// Package vp8 reads what the engine needs of a VP8 frame (RFC 6386): its
// keyframe flag and, from a keyframe's header, the picture size.
package vp8

import "encoding/binary"

// IsKeyframe reports whether frame is a keyframe: bit 0 of the frame tag
// (RFC 6386 9.1) is 0 on one.
func IsKeyframe(frame []byte) bool { return len(frame) > 0 && frame[0]&1 == 0 }

// KeyframeSize reads a keyframe's size from its header (RFC 6386 9.1):
// the 3-byte frame tag, the start code 9d 01 2a, then 14-bit width and
// height, each with a 2-bit scale above it.
func KeyframeSize(frame []byte) (width, height int, ok bool) {
	if len(frame) < 10 || !IsKeyframe(frame) || frame[3] != 0x9d || frame[4] != 0x01 || frame[5] != 0x2a {
		return 0, 0, false
	}
	width = int(binary.LittleEndian.Uint16(frame[6:]) & 0x3fff)
	height = int(binary.LittleEndian.Uint16(frame[8:]) & 0x3fff)
	return width, height, width > 0 && height > 0
}
