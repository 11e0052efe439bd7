package main

import (
	"math"
	"slices"
	"time"
)

// firstFrame watches a subscriber's H.264 RTP packets (RFC 6184) for the
// first frame a decoder can show: an IDR picture whose packets all
// arrived, from the frame's first packet to the one with the marker bit,
// without a sequence gap. A frame's first packet is the first one
// received, when it begins a NAL unit, or the one right after the
// previous frame's marker.
type firstFrame struct {
	started  bool
	prevSeq  uint16
	prevMark bool
	ts       uint32
	complete bool // no gap in the current frame so far
	idr      bool // the current frame has an IDR slice
}

// add takes the next packet in arrival order and reports whether it
// completed the first showable frame.
func (f *firstFrame) add(seq uint16, ts uint32, marker bool, payload []byte) bool {
	if len(payload) == 0 {
		return false
	}
	switch {
	case !f.started:
		f.started, f.ts, f.idr = true, ts, false
		f.complete = beginsNAL(payload)
	case ts != f.ts:
		f.ts, f.idr = ts, false
		f.complete = f.prevMark && seq == f.prevSeq+1 && beginsNAL(payload)
	case seq != f.prevSeq+1:
		f.complete = false
	}
	f.idr = f.idr || hasIDR(payload)
	f.prevSeq, f.prevMark = seq, marker
	return marker && f.complete && f.idr
}

// beginsNAL reports whether an RTP payload starts a NAL unit: any
// packetisation but an FU-A fragment without its start bit.
func beginsNAL(p []byte) bool {
	if p[0]&0x1f == 28 {
		return len(p) > 1 && p[1]&0x80 != 0
	}
	return true
}

// hasIDR reports whether an RTP payload carries (part of) an IDR slice:
// a single NAL unit of type 5, a STAP-A with one, or an FU-A fragment of
// one.
func hasIDR(p []byte) bool {
	switch t := p[0] & 0x1f; t {
	case 5:
		return true
	case 24: // STAP-A: 16-bit sizes, then the units
		for i := 1; i+2 < len(p); {
			n := int(p[i])<<8 | int(p[i+1])
			if i+2 < len(p) && p[i+2]&0x1f == 5 {
				return true
			}
			i += 2 + n
		}
	case 28:
		return len(p) > 1 && p[1]&0x1f == 5
	}
	return false
}

// percentile is the nearest-rank percentile (0 < p <= 1) of d: the
// smallest value with at least p of the samples at or below it.
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func mean(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return sum / time.Duration(len(d))
}
