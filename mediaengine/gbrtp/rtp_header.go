package gbrtp

import "encoding/binary"

// rtpHeader is what the receiver needs of an RTP header (RFC 3550 5.1).
type rtpHeader struct {
	seq  uint16
	ts   uint32
	ssrc uint32
}

// parseRTP reads a packet's header and returns its payload, aliasing b;
// ok is false for anything that is not a well-formed RTP packet. It
// allocates nothing: it runs for every packet of every stream.
func parseRTP(b []byte) (h rtpHeader, payload []byte, ok bool) {
	if len(b) < 12 || b[0]>>6 != 2 {
		return h, nil, false
	}
	cc := int(b[0] & 0x0f)
	off := 12 + 4*cc
	if len(b) < off {
		return h, nil, false
	}
	if b[0]&0x10 != 0 { // header extension
		if len(b) < off+4 {
			return h, nil, false
		}
		off += 4 + 4*int(binary.BigEndian.Uint16(b[off+2:off+4]))
		if len(b) < off {
			return h, nil, false
		}
	}
	end := len(b)
	if b[0]&0x20 != 0 { // padding: the last byte counts it
		pad := int(b[end-1])
		if pad == 0 || off+pad > end {
			return h, nil, false
		}
		end -= pad
	}
	h.seq = binary.BigEndian.Uint16(b[2:4])
	h.ts = binary.BigEndian.Uint32(b[4:8])
	h.ssrc = binary.BigEndian.Uint32(b[8:12])
	return h, b[off:end], true
}
