package rtpcodec

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"time"

	"github.com/pion/rtp"

	"github.com/svcplatform/svc/mediaengine/media"
)

// aacDepacketizer implements RFC 3640 mpeg4-generic for AAC (AAC-hbr,
// AAC-lbr and generic modes): the AU-header section with the field widths
// the SDP gives, several access units per packet, and an access unit
// fragmented over packets with the same timestamp.
type aacDepacketizer struct {
	track    *media.Track
	timeline *Timeline
	emit     func(*media.Frame)
	seq      sequenceTracker
	stats    DepacketizerStats

	sizeLength, indexLength, indexDeltaLength int
	ctsDeltaLength, dtsDeltaLength            int
	randomAccess                              bool
	streamStateLength, auxSizeLength          int
	frameTicks                                int64 // samples per AU

	sizes []int // reused per packet
	clock audioClock

	// A fragmented AU being gathered.
	frag      []byte
	fragSize  int
	fragTS    uint32
	fragOpen  bool
	fragStart time.Time
}

func newAACDepacketizer(f Format, track *media.Track, clock *StreamClock, emit func(*media.Frame)) (*aacDepacketizer, error) {
	d := &aacDepacketizer{
		track:      track,
		timeline:   NewTimeline(clock, track.ClockRate),
		emit:       emit,
		frameTicks: 1024,
		sizes:      make([]int, 0, 16),
	}
	ints := []struct {
		key string
		dst *int
	}{
		{"sizelength", &d.sizeLength}, {"indexlength", &d.indexLength},
		{"indexdeltalength", &d.indexDeltaLength}, {"ctsdeltalength", &d.ctsDeltaLength},
		{"dtsdeltalength", &d.dtsDeltaLength}, {"streamstateindication", &d.streamStateLength},
		{"auxiliarydatasizelength", &d.auxSizeLength},
	}
	for _, p := range ints {
		v, ok := f.FMTP[p.key]
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 32 {
			return nil, fmt.Errorf("%w: %s=%q", ErrBadParameters, p.key, v)
		}
		*p.dst = n
	}
	if v := f.FMTP["randomaccessindication"]; v == "1" {
		d.randomAccess = true
	}
	if v, ok := f.FMTP["constantduration"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%w: constantduration=%q", ErrBadParameters, v)
		}
		d.frameTicks = int64(n)
	}
	return d, nil
}

func (d *aacDepacketizer) Stats() *DepacketizerStats { return &d.stats }

func (d *aacDepacketizer) SenderReport(ntp time.Time, rtpTS uint32, arrival time.Time) {
	d.timeline.SenderReport(ntp, rtpTS, arrival)
}

func (d *aacDepacketizer) hasHeaders() bool {
	return d.sizeLength+d.indexLength+d.indexDeltaLength+d.ctsDeltaLength+d.dtsDeltaLength+d.streamStateLength > 0 || d.randomAccess
}

// accept counts a packet and tracks its sequence number: false for a
// duplicate or late packet, which is ignored; a gap drops the fragment
// being gathered.
func (d *aacDepacketizer) accept(pkt *rtp.Packet) bool {
	d.stats.Packets.Add(1)
	lost, ok := d.seq.advance(pkt.SequenceNumber)
	if !ok {
		return false
	}
	if lost > 0 {
		d.stats.Lost.Add(uint64(lost))
		d.dropFragment()
	}
	return true
}

func (d *aacDepacketizer) Decode(pkt *rtp.Packet, arrival time.Time) error {
	if !d.accept(pkt) {
		return nil
	}
	if d.fragOpen && pkt.Timestamp != d.fragTS {
		d.dropFragment()
	}
	if err := d.payload(pkt, arrival); err != nil {
		d.stats.Malformed.Add(1)
		d.dropFragment()
		return err
	}
	return nil
}

func (d *aacDepacketizer) payload(pkt *rtp.Packet, arrival time.Time) error {
	p := pkt.Payload
	d.sizes = d.sizes[:0]
	if d.hasHeaders() {
		if len(p) < 2 {
			return fmt.Errorf("%w: AAC payload of %d bytes", ErrMalformedPacket, len(p))
		}
		bits := int(binary.BigEndian.Uint16(p))
		n := (bits + 7) / 8
		if 2+n > len(p) {
			return fmt.Errorf("%w: AU headers of %d bits in %d bytes", ErrMalformedPacket, bits, len(p))
		}
		if err := d.headers(p[2:2+n], bits); err != nil {
			return err
		}
		p = p[2+n:]
	}
	if d.auxSizeLength > 0 {
		r := bitReader{b: p}
		aux, ok := r.read(d.auxSizeLength)
		n := (d.auxSizeLength + int(aux) + 7) / 8
		if !ok || n > len(p) {
			return fmt.Errorf("%w: auxiliary section", ErrMalformedPacket)
		}
		p = p[n:]
	}
	if len(d.sizes) == 0 {
		// No AU headers: the payload is one AU, or a fragment of one that
		// the marker bit ends.
		return d.fragment(pkt, p, arrival, -1)
	}
	if d.fragOpen || (len(d.sizes) == 1 && d.sizes[0] > len(p)) {
		return d.fragment(pkt, p, arrival, d.sizes[0])
	}
	total := 0
	for _, n := range d.sizes {
		total += n
	}
	if total > len(p) {
		return fmt.Errorf("%w: AUs of %d bytes in %d", ErrMalformedPacket, total, len(p))
	}
	d.publish(p[:total], pkt.Timestamp, arrival)
	return nil
}

// headers parses the AU-header section into d.sizes.
func (d *aacDepacketizer) headers(b []byte, bits int) error {
	r := bitReader{b: b}
	for i := 0; r.pos < bits; i++ {
		before := r.pos
		size, ok := r.read(d.sizeLength)
		idxLen := d.indexDeltaLength
		if i == 0 {
			idxLen = d.indexLength
		}
		_, ok2 := r.read(idxLen)
		ok = ok && ok2
		for _, l := range []int{d.ctsDeltaLength, d.dtsDeltaLength} {
			if l == 0 {
				continue
			}
			flag, ok3 := r.read(1)
			ok = ok && ok3
			if flag == 1 {
				_, ok3 = r.read(l)
				ok = ok && ok3
			}
		}
		if d.randomAccess {
			_, ok2 = r.read(1)
			ok = ok && ok2
		}
		_, ok2 = r.read(d.streamStateLength)
		if !ok || !ok2 || r.pos > bits {
			return fmt.Errorf("%w: AU header %d truncated", ErrMalformedPacket, i)
		}
		if len(d.sizes) >= maxNALUsPerAccessUnit {
			return fmt.Errorf("%w: too many AU headers", ErrMalformedPacket)
		}
		d.sizes = append(d.sizes, int(size))
		if r.pos == before {
			break // zero-width headers cannot be counted
		}
	}
	return nil
}

// fragment gathers a fragmented AU; size is its announced size, or -1 when
// only the marker bit tells where it ends.
func (d *aacDepacketizer) fragment(pkt *rtp.Packet, data []byte, arrival time.Time, size int) error {
	if !d.fragOpen {
		d.frag = d.frag[:0]
		d.fragOpen, d.fragTS, d.fragSize, d.fragStart = true, pkt.Timestamp, size, arrival
	}
	if len(d.frag)+len(data) > MaxAccessUnitSize || (d.fragSize >= 0 && len(d.frag)+len(data) > d.fragSize) {
		d.dropFragment()
		return fmt.Errorf("%w: AU fragment overruns its size", ErrMalformedPacket)
	}
	d.frag = append(d.frag, data...)
	if (d.fragSize >= 0 && len(d.frag) == d.fragSize) || (d.fragSize < 0 && pkt.Marker) {
		d.sizes = append(d.sizes[:0], len(d.frag))
		d.publish(d.frag, d.fragTS, d.fragStart)
		d.fragOpen = false
	}
	return nil
}

func (d *aacDepacketizer) dropFragment() {
	if d.fragOpen {
		d.fragOpen = false
		d.stats.Dropped.Add(1)
	}
}

// publish emits the AUs of data (sizes in d.sizes), the first at RTP time
// ts, one frame duration apart. One slab and one frame array serve all of
// them.
func (d *aacDepacketizer) publish(data []byte, ts uint32, arrival time.Time) {
	if len(d.sizes) == 0 {
		return
	}
	slab := append([]byte(nil), data...)
	frames := make([]media.Frame, len(d.sizes))
	pos := d.timeline.Position(ts, arrival)
	off := 0
	for i, n := range d.sizes {
		pts := pos + d.timeline.duration(int64(i)*d.frameTicks)
		if n == 0 || !d.clock.admit(pts) {
			off += n
			d.stats.Dropped.Add(1)
			continue
		}
		f := &frames[i]
		f.Track = d.track
		f.PTS, f.DTS = pts, pts
		f.Payload = slab[off : off+n : off+n]
		off += n
		d.stats.Frames.Add(1)
		d.emit(f)
	}
}
