package rtpcodec

import (
	"encoding/binary"

	"github.com/svcplatform/svc/mediaengine/media"
)

// videoPacketizer implements the sending side of RFC 6184 (H.264,
// packetization-mode 1) and RFC 7798 (H.265): NAL units that fit go out
// alone or aggregated (STAP-A / AP) with their neighbours, larger ones as
// fragmentation units (FU-A / FU). The marker bit ends each access unit.
// Keyframes whose access unit lacks parameter sets get the Track's in
// front, so a player that joins without the SDP's sprop values (or a
// stream whose SDP had none) can still start.
type videoPacketizer struct {
	packetWriter
	track *media.Track
	h265  bool

	// The aggregation being built: its NAL units sit in buf from
	// aggStart on, each behind a 2-byte size.
	aggCount int
	aggEnd   int
	aggF     byte // H.264: OR of forbidden bits; H.265: unused
	aggNRI   byte // H.264: highest NRI
	aggLayer byte // H.265: lowest nuh_layer_id
	aggTID   byte // H.265: lowest TemporalId (plus one)
	withPS   [3][]byte
}

func (p *videoPacketizer) headerSize() int {
	if p.h265 {
		return 2
	}
	return 1
}

// aggStart is where the first aggregated unit's size field goes.
func (p *videoPacketizer) aggStart() int { return rtpHeaderSize + p.headerSize() }

func (p *videoPacketizer) Packetize(f *media.Frame, ts uint32, send func([]byte) error) error {
	nalus := f.NALUs
	var ps [][]byte
	if f.Keyframe {
		ps = p.missingParameterSets(nalus)
	}
	total := len(ps) + len(nalus)
	p.aggCount, p.aggEnd = 0, p.aggStart()
	for i := 0; i < total; i++ {
		var nalu []byte
		if i < len(ps) {
			nalu = ps[i]
		} else {
			nalu = nalus[i-len(ps)]
		}
		if len(nalu) < p.headerSize() {
			continue
		}
		last := i == total-1
		if p.aggStart()+2+len(nalu) > len(p.buf) {
			// Too big to aggregate: alone if it fits a packet, else in
			// fragments.
			if err := p.flushAggregate(ts, false, send); err != nil {
				return err
			}
			var err error
			if len(nalu) <= p.maxPayload() {
				copy(p.buf[rtpHeaderSize:], nalu)
				err = p.send(rtpHeaderSize, rtpHeaderSize+len(nalu), ts, last, send)
			} else {
				err = p.fragment(nalu, ts, last, send)
			}
			if err != nil {
				return err
			}
			continue
		}
		if p.aggEnd+2+len(nalu) > len(p.buf) {
			if err := p.flushAggregate(ts, false, send); err != nil {
				return err
			}
		}
		p.aggregate(nalu)
	}
	return p.flushAggregate(ts, true, send)
}

// missingParameterSets returns the Track's parameter sets a keyframe's
// access unit does not carry itself.
func (p *videoPacketizer) missingParameterSets(nalus [][]byte) [][]byte {
	var have [3]bool // VPS, SPS, PPS
	for _, n := range nalus {
		if len(n) == 0 {
			continue
		}
		if p.h265 {
			switch h265Type(n) {
			case h265NALVPS:
				have[0] = true
			case h265NALSPS:
				have[1] = true
			case h265NALPPS:
				have[2] = true
			}
		} else {
			switch h264Type(n) {
			case h264NALSPS:
				have[1] = true
			case h264NALPPS:
				have[2] = true
			}
		}
	}
	out := p.withPS[:0]
	for i, ps := range [][]byte{p.track.VPS, p.track.SPS, p.track.PPS} {
		if !have[i] && len(ps) > 0 && (p.h265 || i > 0) {
			out = append(out, ps)
		}
	}
	return out
}

func (p *videoPacketizer) aggregate(nalu []byte) {
	if p.aggCount == 0 {
		p.aggF, p.aggNRI, p.aggLayer, p.aggTID = 0, 0, 0x3f, 7
	}
	if p.h265 {
		layer := (nalu[0]&1)<<5 | nalu[1]>>3
		p.aggLayer = min(p.aggLayer, layer)
		p.aggTID = min(p.aggTID, nalu[1]&7)
	} else {
		p.aggF |= nalu[0] & 0x80
		p.aggNRI = max(p.aggNRI, nalu[0]&0x60)
	}
	binary.BigEndian.PutUint16(p.buf[p.aggEnd:], uint16(len(nalu)))
	copy(p.buf[p.aggEnd+2:], nalu)
	p.aggEnd += 2 + len(nalu)
	p.aggCount++
}

// flushAggregate sends what is aggregated: one NAL unit as a single NAL
// unit packet (its bytes are already in place after the size field),
// several as a STAP-A or AP.
func (p *videoPacketizer) flushAggregate(ts uint32, marker bool, send func([]byte) error) error {
	n := p.aggCount
	p.aggCount = 0
	end := p.aggEnd
	p.aggEnd = p.aggStart()
	switch n {
	case 0:
		return nil
	case 1:
		return p.send(p.aggStart()+2, end, ts, marker, send)
	}
	start := rtpHeaderSize
	if p.h265 {
		p.buf[start] = h265NALAP<<1 | p.aggLayer>>5
		p.buf[start+1] = p.aggLayer<<3 | p.aggTID
	} else {
		p.buf[start] = p.aggF | p.aggNRI | h264NALSTAPA
	}
	return p.send(start, end, ts, marker, send)
}

// fragment sends one NAL unit as FU-A (H.264) or FU (H.265) packets.
func (p *videoPacketizer) fragment(nalu []byte, ts uint32, lastNALU bool, send func([]byte) error) error {
	var fuHeaderAt, dataAt int
	var typ byte
	start := rtpHeaderSize
	if p.h265 {
		typ = h265Type(nalu)
		p.buf[start] = nalu[0]&0x81 | h265NALFU<<1
		p.buf[start+1] = nalu[1]
		fuHeaderAt, dataAt = start+2, start+3
		nalu = nalu[2:]
	} else {
		typ = h264Type(nalu)
		p.buf[start] = nalu[0]&0xe0 | h264NALFUA
		fuHeaderAt, dataAt = start+1, start+2
		nalu = nalu[1:]
	}
	room := len(p.buf) - dataAt
	for first := true; len(nalu) > 0; first = false {
		chunk := min(room, len(nalu))
		fu := typ
		if first {
			fu |= 0x80
		}
		end := chunk == len(nalu)
		if end {
			fu |= 0x40
		}
		p.buf[fuHeaderAt] = fu
		copy(p.buf[dataAt:], nalu[:chunk])
		if err := p.send(start, dataAt+chunk, ts, end && lastNALU, send); err != nil {
			return err
		}
		nalu = nalu[chunk:]
	}
	return nil
}
