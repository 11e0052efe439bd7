package rtpcodec

import (
	"bytes"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
)

// naluClass is what the video depacketisers tell the builder about a NAL
// unit they hand it.
type naluClass uint8

const (
	naluKeep     naluClass = iota // a picture's slice (VCL)
	naluDrop                      // access unit delimiters, filler: outputs make their own
	naluInfo                      // other non-picture units kept (SEI, ...)
	naluKeyframe                  // IDR / IRAP slice
	naluVPS
	naluSPS
	naluPPS
)

// accessUnitBuilder gathers the NAL units of one video access unit in a
// reused buffer and publishes it as a Frame: it owns the parts H.264 and
// H.265 share (timestamps, keyframe gating, parameter sets, DTS, bounds).
type accessUnitBuilder struct {
	track    *media.Track
	timeline *Timeline
	dts      *DTSEstimator
	emit     func(*media.Frame)
	stats    *DepacketizerStats
	classify func(nalu []byte) naluClass

	active   bool
	ts       uint32
	arrival  time.Time
	buf      []byte
	spans    []span
	fragOpen bool // a fragmented NAL unit is being gathered (its span is last)
	broken   bool // a packet of this access unit was lost
	carry    bool // the units gathered wait for the next picture

	keyframeSeen bool // a keyframe has been published
	probing      bool
	probe        []*media.Frame
	probePTS     []time.Duration
}

type span struct{ start, end int }

// probeFrames and probeSpan end the start-up probe of DTSEstimator: after
// this many frames, or this much presentation time, whichever comes first.
const (
	probeFrames = 5
	probeSpan   = 300 * time.Millisecond
)

func newAccessUnitBuilder(track *media.Track, clock *StreamClock, emit func(*media.Frame), stats *DepacketizerStats, classify func([]byte) naluClass) accessUnitBuilder {
	return accessUnitBuilder{
		track:    track,
		timeline: NewTimeline(clock, track.ClockRate),
		dts:      NewDTSEstimator(track.ClockRate),
		emit:     emit,
		stats:    stats,
		classify: classify,
		probing:  true,
		buf:      make([]byte, 0, 64<<10),
		spans:    make([]span, 0, 16),
	}
}

// packet prepares for a packet with RTP time ts: a new timestamp ends the
// previous access unit (sources that omit the marker bit), a gap in the
// sequence marks the current one broken.
func (b *accessUnitBuilder) packet(ts uint32, arrival time.Time, lost int) {
	if lost > 0 {
		b.stats.Lost.Add(uint64(lost))
		b.abortFragment()
		if b.active {
			b.broken = true
		}
	}
	if b.active && ts != b.ts {
		b.flush()
	}
	if !b.active {
		b.active, b.ts, b.arrival = true, ts, arrival
		if lost > 0 {
			// The loss may have taken the start of this access unit.
			b.broken = true
		}
	}
}

// add appends one complete NAL unit.
func (b *accessUnitBuilder) add(nalu []byte) {
	if len(nalu) == 0 || b.fragOpen {
		b.abortFragment()
		if len(nalu) == 0 {
			return
		}
	}
	if !b.room(len(nalu)) {
		return
	}
	start := len(b.buf)
	b.buf = append(b.buf, nalu...)
	b.spans = append(b.spans, span{start, len(b.buf)})
}

// startFragment opens a fragmented NAL unit with its reconstructed header.
func (b *accessUnitBuilder) startFragment(header ...byte) {
	b.abortFragment()
	if !b.room(len(header)) {
		return
	}
	start := len(b.buf)
	b.buf = append(b.buf, header...)
	b.spans = append(b.spans, span{start, len(b.buf)})
	b.fragOpen = true
}

// appendFragment adds to the open fragmented NAL unit; it reports false if
// none is open (its start was lost).
func (b *accessUnitBuilder) appendFragment(data []byte) bool {
	if !b.fragOpen {
		return false
	}
	if len(b.buf)+len(data) > MaxAccessUnitSize {
		b.abortFragment()
		b.broken = true
		return false
	}
	b.buf = append(b.buf, data...)
	b.spans[len(b.spans)-1].end = len(b.buf)
	return true
}

func (b *accessUnitBuilder) endFragment() { b.fragOpen = false }

func (b *accessUnitBuilder) abortFragment() {
	if !b.fragOpen {
		return
	}
	last := b.spans[len(b.spans)-1]
	b.buf = b.buf[:last.start]
	b.spans = b.spans[:len(b.spans)-1]
	b.fragOpen = false
}

func (b *accessUnitBuilder) room(n int) bool {
	if len(b.buf)+n > MaxAccessUnitSize || len(b.spans) >= maxNALUsPerAccessUnit {
		b.broken = true
		return false
	}
	return true
}

// flush publishes the gathered access unit, if it is whole and decodable.
func (b *accessUnitBuilder) flush() {
	if !b.active {
		return
	}
	b.abortFragment()
	defer b.reset()
	if b.broken {
		b.stats.Dropped.Add(1)
		return
	}
	if len(b.spans) == 0 {
		return
	}
	keyframe, picture, size, count := false, false, 0, 0
	var vps, sps, pps []byte
	for i, s := range b.spans {
		nalu := b.buf[s.start:s.end]
		if len(nalu) == 0 { // a repeat left out before the units were carried
			continue
		}
		class := b.classify(nalu)
		if (class == naluVPS || class == naluSPS || class == naluPPS) && b.repeated(i) {
			// A parameter set the access unit already has (GStreamer repeats
			// them before every slice of an IDR): ffmpeg's parser would take
			// it for the start of a new picture.
			b.spans[i].end = s.start
			continue
		}
		switch class {
		case naluDrop:
			continue
		case naluKeep:
			picture = true
		case naluKeyframe:
			keyframe, picture = true, true
		case naluVPS:
			vps = nalu
		case naluSPS:
			sps = nalu
		case naluPPS:
			pps = nalu
		}
		size += len(nalu)
		count++
	}
	if !picture && len(b.spans) < maxNALUsPerAccessUnit/2 {
		// Parameter sets or SEI sent with a timestamp of their own (some
		// cameras do): they belong to the next picture, not to a frame of
		// their own.
		b.carry = true
		return
	}
	if !b.keyframeSeen {
		// Parameter sets seen in-band complete a track whose SDP had none.
		// The Track is written only here, before its first keyframe is
		// published, as media.Track's contract asks.
		fill(&b.track.VPS, vps)
		fill(&b.track.SPS, sps)
		fill(&b.track.PPS, pps)
		if !keyframe || !b.track.Ready() {
			b.stats.Dropped.Add(1)
			return
		}
		b.keyframeSeen = true
	}
	if count == 0 {
		return
	}
	slab := make([]byte, size)
	nalus := make([][]byte, 0, count)
	off := 0
	for _, s := range b.spans {
		nalu := b.buf[s.start:s.end]
		if len(nalu) == 0 || b.classify(nalu) == naluDrop {
			continue
		}
		n := copy(slab[off:], nalu)
		nalus = append(nalus, slab[off:off+n:off+n])
		off += n
	}
	f := &media.Frame{
		Track:    b.track,
		PTS:      b.timeline.Position(b.ts, b.arrival),
		Keyframe: keyframe,
		NALUs:    nalus,
	}
	b.publish(f)
}

// publish assigns the DTS and emits, holding the first frames until the
// DTS estimator has learned the stream's reordering.
func (b *accessUnitBuilder) publish(f *media.Frame) {
	if !b.probing {
		f.DTS = b.dts.Next(f.PTS)
		b.stats.Frames.Add(1)
		b.emit(f)
		return
	}
	b.probe = append(b.probe, f)
	b.probePTS = append(b.probePTS, f.PTS)
	lo, hi := b.probePTS[0], b.probePTS[0]
	for _, p := range b.probePTS {
		lo, hi = min(lo, p), max(hi, p)
	}
	if len(b.probe) < probeFrames && hi-lo < probeSpan {
		return
	}
	b.dts.Prime(b.probePTS)
	b.probing = false
	for _, p := range b.probe {
		b.publish(p)
	}
	b.probe, b.probePTS = nil, nil
}

// repeated reports whether the i-th unit is byte for byte one of the units
// before it; only parameter sets are asked about, so the cost is a few
// comparisons per keyframe.
func (b *accessUnitBuilder) repeated(i int) bool {
	nalu := b.buf[b.spans[i].start:b.spans[i].end]
	for _, s := range b.spans[:i] {
		if bytes.Equal(b.buf[s.start:s.end], nalu) {
			return true
		}
	}
	return false
}

func (b *accessUnitBuilder) reset() {
	b.active, b.broken, b.fragOpen = false, false, false
	if b.carry {
		b.carry = false // keep the units for the next access unit
		return
	}
	b.buf = b.buf[:0]
	b.spans = b.spans[:0]
}

func fill(dst *[]byte, src []byte) {
	if len(*dst) == 0 && len(src) > 0 {
		*dst = append([]byte(nil), src...)
	}
}
