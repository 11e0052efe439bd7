package rtc

import (
	"encoding/binary"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtpcodec"
)

// rtpFormat is the hub format WHEP viewers read: each frame packetised
// once for all of a stream's viewers, into RTP packets whose payloads every
// viewer sends as they are. A viewer writes only its own header (SSRC,
// sequence number, timestamp base, payload type), so the cost of a frame
// to one more viewer is its headers and SRTP, not a packetisation; and the
// payloads, never modified once made, can be kept by reference for
// retransmission (nack_responder.go) instead of copied.
type rtpFormat struct{}

// Name keys the stream's feed of this format.
func (rtpFormat) Name() string { return "webrtc-rtp" }

// NewMuxer packetises the tracks WebRTC can carry; frames of the others
// (AAC, G.711 that is not 8 kHz mono) yield nothing.
func (rtpFormat) NewMuxer(tracks []*media.Track) (hub.Muxer, error) {
	m := &rtpMuxer{packs: make([]rtpcodec.Packetizer, len(tracks))}
	for _, t := range tracks {
		if t.Kind() == media.KindVideo {
			m.hasVideo = true
		}
		if !carried(t) {
			continue
		}
		// The packetiser's SSRC and sequence numbers are placeholders:
		// each viewer writes its own.
		p, err := rtpcodec.NewPacketizer(rtpcodec.Format{PayloadType: 96, ClockRate: t.ClockRate}, t, 0, 0, mtu)
		if err != nil {
			return nil, err
		}
		m.packs[t.ID] = p
	}
	return m, nil
}

// carried reports whether a WHEP viewer may be sent track t (when its
// offer has the codec: sendCapability decides per viewer).
func carried(t *media.Track) bool {
	switch t.Codec {
	case media.CodecH264, media.CodecH265, media.CodecVP8, media.CodecOpus:
		return true
	case media.CodecPCMU, media.CodecPCMA:
		return (t.SampleRate == 0 || t.SampleRate == 8000) && t.Channels <= 1
	}
	return false
}

// rtpMuxer is one stream's rtpFormat feed; the hub calls it from the
// publisher's goroutine only.
type rtpMuxer struct {
	packs    []rtpcodec.Packetizer // by track id; nil for a track not carried
	hasVideo bool
}

// Header is empty: WebRTC signals codecs in SDP.
func (m *rtpMuxer) Header() []byte { return nil }

// Frame packetises f into Data: its packets one after the other, each
// behind its length (2 bytes, big-endian). Each packet is a whole RTP packet
// whose header holds the marker bit and, as its timestamp, the packet's
// offset from the frame's RTP time (not zero only where G.711 is split);
// its SSRC and sequence number are meaningless.
func (m *rtpMuxer) Frame(f *media.Frame) (hub.Packet, bool) {
	if f.Track.ID < 0 || f.Track.ID >= len(m.packs) || m.packs[f.Track.ID] == nil {
		return hub.Packet{}, false
	}
	// Room for the payload, a header and a length per packet (and an
	// aggregation's few extra bytes), so one allocation usually holds it.
	data := make([]byte, 0, f.Size()+(f.Size()/(mtu-14)+4)*16+len(f.Track.SPS)+len(f.Track.PPS)+len(f.Track.VPS))
	_ = m.packs[f.Track.ID].Packetize(f, 0, func(pkt []byte) error {
		data = binary.BigEndian.AppendUint16(data, uint16(len(pkt)))
		data = append(data, pkt...)
		return nil
	})
	if len(data) == 0 {
		return hub.Packet{}, false
	}
	key := f.Keyframe && f.Track.Kind() == media.KindVideo || !m.hasVideo
	return hub.Packet{Data: data, Keyframe: key}, true
}

// rtpHeaderSize is the size of the header the packetisers write (no CSRC,
// no extension).
const rtpHeaderSize = 12

// nextPacket splits the first packet off data, an rtpFormat packet's
// Data: its payload, marker bit and timestamp offset, and the rest of data.
// ok is false at the end of data (or at bytes that are not a packet, which
// the muxer never writes).
func nextPacket(data []byte) (payload []byte, marker bool, offset uint32, rest []byte, ok bool) {
	if len(data) < 2 {
		return nil, false, 0, nil, false
	}
	n := int(binary.BigEndian.Uint16(data))
	if n < rtpHeaderSize || 2+n > len(data) {
		return nil, false, 0, nil, false
	}
	pkt := data[2 : 2+n]
	return pkt[rtpHeaderSize:], pkt[1]&0x80 != 0, binary.BigEndian.Uint32(pkt[4:8]), data[2+n:], true
}
