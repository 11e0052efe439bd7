package rtpcodec

import (
	"time"

	"github.com/pion/rtp"

	"github.com/svcplatform/svc/mediaengine/media"
)

// frameDepacketizer serves the payload formats where one RTP packet is one
// frame: G.711 (RFC 3551, a run of samples) and Opus (RFC 7587, one Opus
// packet).
type frameDepacketizer struct {
	track    *media.Track
	timeline *Timeline
	emit     func(*media.Frame)
	seq      sequenceTracker
	stats    DepacketizerStats
	clock    audioClock
}

func newFrameDepacketizer(track *media.Track, clock *StreamClock, emit func(*media.Frame)) *frameDepacketizer {
	return &frameDepacketizer{track: track, timeline: NewTimeline(clock, track.ClockRate), emit: emit}
}

func (d *frameDepacketizer) Stats() *DepacketizerStats { return &d.stats }

func (d *frameDepacketizer) SenderReport(ntp time.Time, rtpTS uint32, arrival time.Time) {
	d.timeline.SenderReport(ntp, rtpTS, arrival)
}

func (d *frameDepacketizer) Decode(pkt *rtp.Packet, arrival time.Time) error {
	d.stats.Packets.Add(1)
	lost, ok := d.seq.advance(pkt.SequenceNumber)
	if !ok {
		return nil
	}
	d.stats.Lost.Add(uint64(lost))
	if len(pkt.Payload) == 0 {
		return nil // Opus DTX or a keepalive
	}
	pts := d.timeline.Position(pkt.Timestamp, arrival)
	if !d.clock.admit(pts) {
		d.stats.Dropped.Add(1)
		return nil
	}
	f := &media.Frame{Track: d.track, PTS: pts, DTS: pts, Payload: append([]byte(nil), pkt.Payload...)}
	d.stats.Frames.Add(1)
	d.emit(f)
	return nil
}
