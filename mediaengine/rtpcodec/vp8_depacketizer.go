package rtpcodec

import (
	"time"

	"github.com/pion/rtp"

	"github.com/svcplatform/svc/mediaengine/codec/vp8"
	"github.com/svcplatform/svc/mediaengine/media"
)

// vp8Depacketizer gathers VP8 frames from RTP (RFC 7741): each packet's
// payload descriptor is skipped, a frame starts at a packet with S set and
// partition index 0 and ends at the marker bit (or a new timestamp). A
// frame that lost a packet is dropped whole; the decoder conceals the gap
// until the next keyframe, and NACK retransmission, put back in order by
// the caller, makes that rare. Nothing is published before the first
// keyframe, whose header gives the track its size.
type vp8Depacketizer struct {
	track    *media.Track
	timeline *Timeline
	emit     func(*media.Frame)
	seq      sequenceTracker
	stats    DepacketizerStats
	clock    audioClock // VP8 has no reordering: PTS only moves forward

	active   bool
	ts       uint32
	arrival  time.Time
	buf      []byte
	broken   bool
	keyframe bool
	seenKey  bool
}

func newVP8Depacketizer(track *media.Track, clock *StreamClock, emit func(*media.Frame)) *vp8Depacketizer {
	return &vp8Depacketizer{track: track, timeline: NewTimeline(clock, track.ClockRate), emit: emit, buf: make([]byte, 0, 64<<10)}
}

func (d *vp8Depacketizer) Stats() *DepacketizerStats { return &d.stats }

func (d *vp8Depacketizer) SenderReport(ntp time.Time, rtpTS uint32, arrival time.Time) {
	d.timeline.SenderReport(ntp, rtpTS, arrival)
}

func (d *vp8Depacketizer) Decode(pkt *rtp.Packet, arrival time.Time) error {
	d.stats.Packets.Add(1)
	lost, ok := d.seq.advance(pkt.SequenceNumber)
	if !ok || len(pkt.Payload) == 0 {
		return nil // a duplicate, or a padding-only keepalive
	}
	if lost > 0 {
		d.stats.Lost.Add(uint64(lost))
		d.broken = d.active
	}
	if d.active && pkt.Timestamp != d.ts {
		d.flush()
	}
	data, start, err := VP8Payload(pkt.Payload)
	if err != nil {
		d.stats.Malformed.Add(1)
		d.broken = d.active
		return err
	}
	switch {
	case start:
		if d.active {
			d.flush() // the previous frame lost its last packet
		}
		d.active, d.ts, d.arrival, d.buf = true, pkt.Timestamp, arrival, d.buf[:0]
		d.broken = false
		d.keyframe = vp8.IsKeyframe(data)
	case !d.active:
		// The packet that starts this frame was lost.
		d.stats.Dropped.Add(1)
		return nil
	}
	if len(d.buf)+len(data) > MaxAccessUnitSize {
		d.broken = true
		d.flush()
		return ErrFrameTooLarge
	}
	d.buf = append(d.buf, data...)
	if pkt.Marker {
		d.flush()
	}
	return nil
}

// flush publishes the gathered frame if it is whole.
func (d *vp8Depacketizer) flush() {
	if !d.active {
		return
	}
	d.active = false
	if d.broken || len(d.buf) == 0 {
		d.stats.Dropped.Add(1)
		return
	}
	if d.keyframe {
		w, h, ok := vp8.KeyframeSize(d.buf)
		if !ok {
			d.stats.Malformed.Add(1)
			d.stats.Dropped.Add(1)
			return
		}
		if !d.seenKey {
			// The Track is written only before its first keyframe is
			// published, as media.Track's contract asks.
			d.track.Width, d.track.Height = w, h
			d.seenKey = true
		}
	}
	if !d.seenKey {
		d.stats.Dropped.Add(1)
		return
	}
	pts := d.timeline.Position(d.ts, d.arrival)
	if !d.clock.admit(pts) {
		d.stats.Dropped.Add(1)
		return
	}
	f := &media.Frame{Track: d.track, PTS: pts, DTS: pts, Keyframe: d.keyframe, Payload: append([]byte(nil), d.buf...)}
	d.stats.Frames.Add(1)
	d.emit(f)
}

// VP8Payload skips the VP8 payload descriptor (RFC 7741 4.2) of an RTP
// payload and reports whether the packet starts a frame (S set, partition
// index 0).
func VP8Payload(p []byte) (data []byte, start bool, err error) {
	if len(p) < 1 {
		return nil, false, ErrMalformedPacket
	}
	b0 := p[0]
	start = b0&0x10 != 0 && b0&0x07 == 0
	i := 1
	if b0&0x80 != 0 { // X: extension byte follows
		if len(p) < 2 {
			return nil, false, ErrMalformedPacket
		}
		x := p[1]
		i = 2
		if x&0x80 != 0 { // I: PictureID, 7 or 15 bits (M)
			if len(p) < i+1 {
				return nil, false, ErrMalformedPacket
			}
			if p[i]&0x80 != 0 {
				i++
			}
			i++
		}
		if x&0x40 != 0 { // L: TL0PICIDX
			i++
		}
		if x&0x30 != 0 { // T or K: TID/Y/KEYIDX
			i++
		}
	}
	if len(p) <= i {
		return nil, false, ErrMalformedPacket
	}
	return p[i:], start, nil
}
