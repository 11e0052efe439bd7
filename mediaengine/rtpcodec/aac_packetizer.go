package rtpcodec

import (
	"encoding/binary"

	"github.com/svcplatform/svc/mediaengine/media"
)

// aacPacketizer sends AAC frames as RFC 3640 AAC-hbr (sizelength 13,
// indexlength 3): one access unit per packet, fragmented over several
// packets when it does not fit, the marker bit on its last fragment.
type aacPacketizer struct {
	packetWriter
}

func (p *aacPacketizer) Packetize(f *media.Frame, ts uint32, send func([]byte) error) error {
	au := f.Payload
	if len(au) == 0 || len(au) >= 1<<13 {
		return nil // empty, or larger than a 13-bit size can announce
	}
	start := rtpHeaderSize
	binary.BigEndian.PutUint16(p.buf[start:], 16) // AU-headers-length in bits
	binary.BigEndian.PutUint16(p.buf[start+2:], uint16(len(au))<<3)
	dataAt := start + 4
	room := len(p.buf) - dataAt
	for len(au) > 0 {
		chunk := min(room, len(au))
		copy(p.buf[dataAt:], au[:chunk])
		au = au[chunk:]
		if err := p.send(start, dataAt+chunk, ts, len(au) == 0, send); err != nil {
			return err
		}
	}
	return nil
}
