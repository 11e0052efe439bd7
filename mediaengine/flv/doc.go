// Package flv writes and reads FLV (Adobe FLV 10.1, Annex E) as HTTP-FLV
// serves it: H.264 and AAC as in the original specification, H.265 as
// Enhanced FLV (Enhanced RTMP v1, FourCC "hvc1"), G.711 A-law and µ-law as
// sound formats 7 and 8.
//
// Muxer is a hub.Format muxer: each frame becomes one complete tag
// (header, body and the following PreviousTagSize) in one allocation that
// every HTTP-FLV reader of the stream shares.
package flv

// Tag types.
const (
	TagAudio  = 8
	TagVideo  = 9
	TagScript = 18
)

// Header is the 9-byte file header with audio and video flags plus
// PreviousTagSize0.
func Header(audio, video bool) []byte {
	flags := byte(0)
	if audio {
		flags |= 4
	}
	if video {
		flags |= 1
	}
	return []byte{'F', 'L', 'V', 1, flags, 0, 0, 0, 9, 0, 0, 0, 0}
}

// TagHeaderSize is the size of a tag header; each tag is followed by a
// 4-byte PreviousTagSize.
const TagHeaderSize = 11

// appendTagHeader appends a tag header for a body of size bytes at
// timestamp ms.
func appendTagHeader(dst []byte, typ byte, size int, ms uint32) []byte {
	return append(dst, typ, byte(size>>16), byte(size>>8), byte(size),
		byte(ms>>16), byte(ms>>8), byte(ms), byte(ms>>24), 0, 0, 0)
}

func appendPrevSize(dst []byte, bodySize int) []byte {
	n := uint32(TagHeaderSize + bodySize)
	return append(dst, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}
