package rtspserver

import (
	"net/netip"
	"time"

	"github.com/pion/rtp"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtpcodec"
)

// sessionTrack is one track of a server session: how it was set up and the
// codec state that moves its packets.
type sessionTrack struct {
	track   *media.Track
	format  rtpcodec.Format
	control string // the announced control attribute (publish)

	setup      bool
	channel    int // TCP: RTP interleaved channel; RTCP is channel+1
	clientRTP  netip.AddrPort
	clientRTCP netip.AddrPort

	// Publish side.
	depack  rtpcodec.Depacketizer
	reorder *rtpcodec.ReorderBuffer
	pkt     rtp.Packet
	deliver func([]byte, time.Time) // reorder's callback, made once

	// Play side.
	packetizer rtpcodec.Packetizer
	ssrc       uint32
	tsBase     uint32
	sent       bool
	lastSR     time.Time
	lastTS     uint32
	lastPTS    time.Duration
}

// decode depacketises one RTP packet; damaged packets are counted by the
// depacketiser and skipped.
func (t *sessionTrack) decode(raw []byte, arrival time.Time) {
	if err := t.pkt.Unmarshal(raw); err != nil {
		t.depack.Stats().Malformed.Add(1)
		return
	}
	t.depack.Decode(&t.pkt, arrival)
}

// rtpTime maps a presentation time to this track's RTP clock, relative to
// the session's play origin.
func (t *sessionTrack) rtpTime(pts, origin time.Duration) uint32 {
	d := pts - origin
	rate := time.Duration(t.format.ClockRate)
	ticks := int64(d/time.Second)*int64(rate) + int64(d%time.Second*rate/time.Second)
	return t.tsBase + uint32(ticks)
}
