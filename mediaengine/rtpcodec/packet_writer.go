package rtpcodec

import "encoding/binary"

// packetWriter holds the RTP header state and the one packet buffer a
// packetiser builds in. Payloads are written at an offset so a header can
// be placed right before them without moving bytes.
type packetWriter struct {
	pt      uint8
	ssrc    uint32
	seq     uint16
	buf     []byte
	packets uint32
	octets  uint32
}

func (w *packetWriter) NextSequence() uint16 { return w.seq }

func (w *packetWriter) Counts() (uint32, uint32) { return w.packets, w.octets }

// maxPayload is the payload room of one packet.
func (w *packetWriter) maxPayload() int { return len(w.buf) - rtpHeaderSize }

// send writes the RTP header into buf[start-12:start] and sends
// buf[start-12:end].
func (w *packetWriter) send(start, end int, ts uint32, marker bool, send func([]byte) error) error {
	h := w.buf[start-rtpHeaderSize : start]
	h[0] = 0x80
	h[1] = w.pt & 0x7f
	if marker {
		h[1] |= 0x80
	}
	binary.BigEndian.PutUint16(h[2:], w.seq)
	binary.BigEndian.PutUint32(h[4:], ts)
	binary.BigEndian.PutUint32(h[8:], w.ssrc)
	w.seq++
	w.packets++
	w.octets += uint32(end - start)
	return send(w.buf[start-rtpHeaderSize : end])
}
