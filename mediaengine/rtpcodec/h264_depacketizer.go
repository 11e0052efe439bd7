package rtpcodec

import (
	"encoding/binary"
	"fmt"

	"github.com/svcplatform/svc/mediaengine/media"
)

// h264Depacketizer implements RFC 6184 non-interleaved mode: single NAL
// unit packets, STAP-A and FU-A (including a fragment that carries both
// the start and end bits). Access units end at the marker bit or, for
// sources that omit it, when the timestamp changes.
type h264Depacketizer struct {
	videoDepacketizer
}

func newH264Depacketizer(track *media.Track, clock *StreamClock, emit func(*media.Frame)) *h264Depacketizer {
	d := &h264Depacketizer{}
	d.au = newAccessUnitBuilder(track, clock, emit, &d.stats, classifyH264)
	d.parse = d.payload
	return d
}

func classifyH264(nalu []byte) naluClass {
	switch h264Type(nalu) {
	case h264NALIDR:
		return naluKeyframe
	case h264NALSPS:
		return naluSPS
	case h264NALPPS:
		return naluPPS
	case h264NALAUD, h264NALFiller:
		return naluDrop
	}
	if t := h264Type(nalu); t >= h264NALSlice && t <= h264NALIDR {
		return naluKeep
	}
	return naluInfo
}

func (d *h264Depacketizer) payload(p []byte) error {
	switch typ := h264Type(p); {
	case typ >= 1 && typ <= 23:
		d.au.add(p)
	case typ == h264NALSTAPA:
		p = p[1:]
		for len(p) > 0 {
			if len(p) < 2 {
				return fmt.Errorf("%w: STAP-A truncated size", ErrMalformedPacket)
			}
			n := int(binary.BigEndian.Uint16(p))
			p = p[2:]
			if n == 0 || n > len(p) {
				return fmt.Errorf("%w: STAP-A unit of %d bytes in %d", ErrMalformedPacket, n, len(p))
			}
			d.au.add(p[:n])
			p = p[n:]
		}
	case typ == h264NALFUA:
		if len(p) < 3 {
			return fmt.Errorf("%w: FU-A of %d bytes", ErrMalformedPacket, len(p))
		}
		start, end := p[1]&0x80 != 0, p[1]&0x40 != 0
		if start {
			d.au.startFragment(p[0]&0xe0 | p[1]&0x1f)
		}
		if !d.au.appendFragment(p[2:]) {
			return nil // its start was lost: counted with the loss
		}
		if end {
			d.au.endFragment()
		}
	case typ == h264NALSTAPB, typ == h264NALMTAP16, typ == h264NALMTAP24, typ == h264NALFUB:
		return fmt.Errorf("%w: H.264 packet type %d belongs to interleaved mode", ErrUnsupportedCodec, typ)
	default:
		return fmt.Errorf("%w: H.264 NAL type %d", ErrMalformedPacket, typ)
	}
	return nil
}
