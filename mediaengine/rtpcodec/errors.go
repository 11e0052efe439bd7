package rtpcodec

import "errors"

// Errors a depacketiser or packetiser returns. Depacketisers report a
// damaged packet and carry on with the next one: one bad packet never ends
// a stream.
var (
	// ErrUnsupportedCodec means the payload format is not one the engine
	// carries (or its SDP parameters ask for a mode it does not support,
	// such as H.264 interleaved mode).
	ErrUnsupportedCodec = errors.New("rtpcodec: unsupported payload format")
	// ErrMalformedPacket means a payload does not follow its RFC.
	ErrMalformedPacket = errors.New("rtpcodec: malformed RTP payload")
	// ErrFrameTooLarge means an access unit grew past MaxAccessUnitSize
	// (a source that never ends its frames); it is dropped.
	ErrFrameTooLarge = errors.New("rtpcodec: access unit too large")
	// ErrBadParameters means SDP format parameters cannot be decoded.
	ErrBadParameters = errors.New("rtpcodec: bad format parameters")
)

// MaxAccessUnitSize bounds the bytes gathered for one access unit, so a
// broken or hostile source cannot make the engine allocate without limit.
// 8 MiB holds an 8K intra frame at a generous bitrate.
const MaxAccessUnitSize = 8 << 20

// maxNALUsPerAccessUnit bounds the NAL unit count of one access unit for
// the same reason (real encoders use at most a few hundred slices).
const maxNALUsPerAccessUnit = 1024
