package rtpcodec

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/svcplatform/svc/mediaengine/media"
)

// h265Depacketizer implements RFC 7798: single NAL unit packets,
// aggregation packets (AP) and fragmentation units (FU), with the DONL/DOND
// fields present when the SDP's sprop-max-don-diff is above zero. PACI
// packets are skipped.
type h265Depacketizer struct {
	videoDepacketizer
	donl bool
}

func newH265Depacketizer(f Format, track *media.Track, clock *StreamClock, emit func(*media.Frame)) (*h265Depacketizer, error) {
	d := &h265Depacketizer{}
	if v, ok := f.FMTP["sprop-max-don-diff"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w: sprop-max-don-diff=%q", ErrBadParameters, v)
		}
		d.donl = n > 0
	}
	d.au = newAccessUnitBuilder(track, clock, emit, &d.stats, classifyH265)
	d.parse = d.payload
	return d, nil
}

func classifyH265(nalu []byte) naluClass {
	if len(nalu) < 2 {
		return naluDrop
	}
	switch t := h265Type(nalu); {
	case t >= h265NALIRAPFirst && t <= h265NALIRAPLast:
		return naluKeyframe
	case t == h265NALVPS:
		return naluVPS
	case t == h265NALSPS:
		return naluSPS
	case t == h265NALPPS:
		return naluPPS
	case t == h265NALAUD, t == h265NALFiller:
		return naluDrop
	case t < h265NALVPS:
		return naluKeep // VCL types 0-31
	}
	return naluInfo
}

func (d *h265Depacketizer) payload(p []byte) error {
	if len(p) < 3 {
		return fmt.Errorf("%w: H.265 payload of %d bytes", ErrMalformedPacket, len(p))
	}
	switch typ := h265Type(p); {
	case typ < h265NALAP:
		if d.donl {
			if len(p) < 5 {
				return fmt.Errorf("%w: H.265 single NAL unit without DONL", ErrMalformedPacket)
			}
			// The NAL unit is the payload header followed by what comes
			// after the DONL; rebuild it in place of the DONL.
			d.au.startFragment(p[0], p[1])
			d.au.appendFragment(p[4:])
			d.au.endFragment()
			return nil
		}
		d.au.add(p)
	case typ == h265NALAP:
		p = p[2:]
		first := true
		for len(p) > 0 {
			if d.donl {
				skip := 1 // DOND
				if first {
					skip = 2 // DONL
				}
				if len(p) < skip {
					return fmt.Errorf("%w: AP truncated DON", ErrMalformedPacket)
				}
				p = p[skip:]
			}
			first = false
			if len(p) < 2 {
				return fmt.Errorf("%w: AP truncated size", ErrMalformedPacket)
			}
			n := int(binary.BigEndian.Uint16(p))
			p = p[2:]
			if n < 2 || n > len(p) {
				return fmt.Errorf("%w: AP unit of %d bytes in %d", ErrMalformedPacket, n, len(p))
			}
			d.au.add(p[:n])
			p = p[n:]
		}
	case typ == h265NALFU:
		fu := p[2]
		start, end, fuType := fu&0x80 != 0, fu&0x40 != 0, fu&0x3f
		data := p[3:]
		if start {
			if d.donl {
				if len(data) < 2 {
					return fmt.Errorf("%w: FU without DONL", ErrMalformedPacket)
				}
				data = data[2:]
			}
			d.au.startFragment(p[0]&0x81|fuType<<1, p[1])
		}
		if !d.au.appendFragment(data) {
			return nil // its start was lost: counted with the loss
		}
		if end {
			d.au.endFragment()
		}
	case typ == h265NALPACI:
		return nil
	default:
		return fmt.Errorf("%w: H.265 NAL type %d", ErrMalformedPacket, typ)
	}
	return nil
}
