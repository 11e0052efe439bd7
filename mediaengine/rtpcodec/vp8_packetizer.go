package rtpcodec

import "github.com/svcplatform/svc/mediaengine/media"

// vp8Packetizer sends VP8 frames (RFC 7741) with the shortest payload
// descriptor: one byte, S set on a frame's first packet, partition index
// 0 throughout (a frame is sent as one partition run); the marker bit ends
// the frame.
type vp8Packetizer struct {
	packetWriter
}

func (p *vp8Packetizer) Packetize(f *media.Frame, ts uint32, send func([]byte) error) error {
	data := f.Payload
	room := p.maxPayload() - 1
	const start = rtpHeaderSize
	descriptor := byte(0x10)
	for len(data) > 0 {
		chunk := min(room, len(data))
		p.buf[start] = descriptor
		n := copy(p.buf[start+1:], data[:chunk])
		data = data[chunk:]
		if err := p.send(start, start+1+n, ts, len(data) == 0, send); err != nil {
			return err
		}
		descriptor = 0
	}
	return nil
}
