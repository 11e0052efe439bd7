package rtpcodec

import "github.com/svcplatform/svc/mediaengine/media"

// framePacketizer sends formats where a packet carries whole frames: G.711
// sample runs (split at the MTU, the timestamp advancing one tick per
// sample) and Opus packets (never split: RFC 7587 has no fragmentation).
type framePacketizer struct {
	packetWriter
	split bool
}

func (p *framePacketizer) Packetize(f *media.Frame, ts uint32, send func([]byte) error) error {
	data := f.Payload
	room := p.maxPayload()
	channels := max(f.Track.Channels, 1)
	if !p.split && len(data) > room {
		// An Opus packet bigger than the MTU goes out whole (the network
		// fragments it) rather than broken.
		if len(p.buf) < rtpHeaderSize+len(data) {
			p.buf = make([]byte, rtpHeaderSize+len(data))
		}
		room = len(data)
	}
	start := rtpHeaderSize
	for len(data) > 0 {
		chunk := min(room, len(data))
		if p.split {
			chunk -= chunk % channels // whole samples of every channel
			if chunk == 0 {
				return nil
			}
		}
		n := copy(p.buf[start:], data[:chunk])
		if err := p.send(start, start+n, ts, false, send); err != nil {
			return err
		}
		data = data[chunk:]
		ts += uint32(chunk / channels) // G.711: one byte per sample
	}
	return nil
}
