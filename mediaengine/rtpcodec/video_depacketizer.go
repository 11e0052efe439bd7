package rtpcodec

import (
	"time"

	"github.com/pion/rtp"
)

// videoDepacketizer is the packet loop H.264 and H.265 share: sequence
// tracking, access-unit boundaries (marker bit or timestamp change) and
// recovery from a damaged payload. The codec parses each payload into the
// accessUnitBuilder.
type videoDepacketizer struct {
	au    accessUnitBuilder
	seq   sequenceTracker
	stats DepacketizerStats
	parse func(p []byte) error
}

func (d *videoDepacketizer) Stats() *DepacketizerStats { return &d.stats }

func (d *videoDepacketizer) SenderReport(ntp time.Time, rtpTS uint32, arrival time.Time) {
	d.au.timeline.SenderReport(ntp, rtpTS, arrival)
}

func (d *videoDepacketizer) Decode(pkt *rtp.Packet, arrival time.Time) error {
	d.stats.Packets.Add(1)
	lost, ok := d.seq.advance(pkt.SequenceNumber)
	if !ok || len(pkt.Payload) == 0 {
		return nil // a duplicate, or a padding-only keepalive
	}
	d.au.packet(pkt.Timestamp, arrival, lost)
	err := d.parse(pkt.Payload)
	if err != nil {
		d.stats.Malformed.Add(1)
		d.au.abortFragment()
		d.au.broken = true
	}
	if pkt.Marker {
		d.au.flush()
	}
	return err
}
