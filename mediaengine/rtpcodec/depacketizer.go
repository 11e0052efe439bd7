package rtpcodec

import (
	"fmt"
	"time"

	"github.com/pion/rtp"

	"github.com/svcplatform/svc/mediaengine/media"
)

// Depacketizer turns the RTP packets of one track, in sequence order, into
// access units. It is owned by one goroutine.
type Depacketizer interface {
	// Decode consumes one packet received at arrival. Frames completed by
	// it are passed to the emit callback given at construction before
	// Decode returns. An error describes a damaged packet; the
	// depacketiser has already recovered and takes the next one.
	Decode(pkt *rtp.Packet, arrival time.Time) error
	// SenderReport feeds the track's RTCP sender reports (for A/V sync).
	SenderReport(ntp time.Time, rtpTS uint32, arrival time.Time)
	// Stats returns the depacketiser's counters.
	Stats() *DepacketizerStats
}

// NewDepacketizer returns the depacketiser for format f of track. Frames
// reference track and are positioned on clock; emit receives each one and
// may keep it (frames are never reused).
func NewDepacketizer(f Format, track *media.Track, clock *StreamClock, emit func(*media.Frame)) (Depacketizer, error) {
	switch track.Codec {
	case media.CodecH264:
		if f.FMTP["packetization-mode"] == "2" {
			return nil, fmt.Errorf("%w: H.264 interleaved mode", ErrUnsupportedCodec)
		}
		return newH264Depacketizer(track, clock, emit), nil
	case media.CodecH265:
		return newH265Depacketizer(f, track, clock, emit)
	case media.CodecAAC:
		if f.isLATM() {
			return newLATMDepacketizer(f, track, clock, emit)
		}
		return newAACDepacketizer(f, track, clock, emit)
	case media.CodecPCMA, media.CodecPCMU, media.CodecOpus:
		return newFrameDepacketizer(track, clock, emit), nil
	case media.CodecVP8:
		return newVP8Depacketizer(track, clock, emit), nil
	}
	return nil, fmt.Errorf("%w: %s", ErrUnsupportedCodec, track.Codec)
}
