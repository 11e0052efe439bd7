package rtpcodec

import (
	"fmt"

	"github.com/svcplatform/svc/mediaengine/media"
)

// Packetizer turns the frames of one track into RTP packets for RTSP
// play-out. It is owned by one goroutine.
type Packetizer interface {
	// Packetize sends frame f, whose presentation time is RTP time ts, as
	// one or more packets. Each packet is passed to send in a buffer that
	// is reused once send returns; the first error from send is returned.
	Packetize(f *media.Frame, ts uint32, send func(pkt []byte) error) error
	// NextSequence is the sequence number of the next packet (for the
	// RTP-Info header).
	NextSequence() uint16
	// Counts reports the packets and payload bytes sent so far (for RTCP
	// sender reports).
	Counts() (packets, octets uint32)
}

// DefaultMTU is the RTP packet size (header included) packetisers aim for:
// an Ethernet MTU less IPv4/UDP headers and some room for tunnels.
const DefaultMTU = 1400

// minMTU keeps fragmentation arithmetic sane.
const minMTU = 64

const rtpHeaderSize = 12

// NewPacketizer returns the packetiser for track sent as format f, with the
// given SSRC and first sequence number, in packets of at most mtu bytes.
func NewPacketizer(f Format, track *media.Track, ssrc uint32, seq uint16, mtu int) (Packetizer, error) {
	if mtu < minMTU {
		mtu = DefaultMTU
	}
	w := packetWriter{pt: f.PayloadType, ssrc: ssrc, seq: seq, buf: make([]byte, mtu)}
	switch track.Codec {
	case media.CodecH264, media.CodecH265:
		return &videoPacketizer{packetWriter: w, track: track, h265: track.Codec == media.CodecH265}, nil
	case media.CodecAAC:
		return &aacPacketizer{packetWriter: w}, nil
	case media.CodecPCMA, media.CodecPCMU:
		return &framePacketizer{packetWriter: w, split: true}, nil
	case media.CodecOpus:
		return &framePacketizer{packetWriter: w}, nil
	case media.CodecVP8:
		return &vp8Packetizer{packetWriter: w}, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrUnsupportedCodec, track.Codec)
}
