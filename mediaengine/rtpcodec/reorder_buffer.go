package rtpcodec

import (
	"encoding/binary"
	"time"
)

// ReorderBuffer puts RTP packets received over UDP back into sequence
// order, drops duplicates and late arrivals, and counts losses. A gap is
// waited for until the window fills or the oldest held packet has waited
// MaxDelay; then the missing packets are counted lost and delivery goes on.
//
// Packets are copied into per-slot buffers that are reused, so it does not
// allocate once warm. In-order packets with nothing held are delivered
// without a copy.
type ReorderBuffer struct {
	slots    []reorderSlot
	mask     uint16
	next     uint16
	started  bool
	held     int
	maxDelay time.Duration
	lower    lowerRestart

	lost, late uint64
}

type reorderSlot struct {
	buf     []byte
	used    bool
	seq     uint16
	arrival time.Time
}

// seqReset is how far a sequence number may be from the expected one before
// the source is taken to have restarted its numbering.
const seqReset = 1000

// NewReorderBuffer returns a buffer holding up to size packets (rounded up
// to a power of two, at most 1024) for at most maxDelay.
func NewReorderBuffer(size int, maxDelay time.Duration) *ReorderBuffer {
	n := 8
	for n < size && n < 1024 {
		n <<= 1
	}
	return &ReorderBuffer{slots: make([]reorderSlot, n), mask: uint16(n - 1), maxDelay: maxDelay}
}

// Lost reports packets never received; Late those that came after their
// place had been given up (or twice).
func (b *ReorderBuffer) Lost() uint64 { return b.lost }
func (b *ReorderBuffer) Late() uint64 { return b.late }

// Push takes one raw RTP packet and calls deliver for every packet that is
// now in order. deliver's slice is valid only during the call.
func (b *ReorderBuffer) Push(raw []byte, arrival time.Time, deliver func(pkt []byte, arrival time.Time)) {
	if len(raw) < 12 {
		b.late++ // not RTP; never delivered
		return
	}
	seq := binary.BigEndian.Uint16(raw[2:4])
	if !b.started {
		b.started, b.next = true, seq
	}
	diff := int16(seq - b.next)
	if diff < 0 && diff >= -seqReset {
		if !b.lower.behind(seq) {
			b.late++
			return
		}
		diff = seqReset + 1 // a run: the source restarted lower
	}
	b.lower.run = 0
	if diff < -seqReset || diff > seqReset {
		// The source restarted its numbering: give up what is held.
		b.drain(deliver)
		b.next = seq
		diff = 0
	}
	if diff == 0 && b.held == 0 {
		b.next++
		deliver(raw, arrival)
		return
	}
	for int(diff) >= len(b.slots) {
		b.skip(deliver)
		diff = int16(seq - b.next)
	}
	s := &b.slots[seq&b.mask]
	if s.used {
		b.late++ // duplicate
		return
	}
	s.buf = append(s.buf[:0], raw...)
	s.used, s.seq, s.arrival = true, seq, arrival
	b.held++
	b.flushInOrder(deliver)
	for b.held > 0 && (b.held >= len(b.slots) || arrival.Sub(b.oldest()) > b.maxDelay) {
		b.skip(deliver)
	}
}

// Flush delivers everything held, counting the gaps as lost; call it when
// the stream pauses so held packets do not wait for a packet that will not
// come.
func (b *ReorderBuffer) Flush(deliver func(pkt []byte, arrival time.Time)) { b.drain(deliver) }

func (b *ReorderBuffer) drain(deliver func([]byte, time.Time)) {
	for b.held > 0 {
		b.skip(deliver)
	}
}

// skip gives up on the next expected packet (if missing) and delivers what
// follows in order.
func (b *ReorderBuffer) skip(deliver func([]byte, time.Time)) {
	if !b.slots[b.next&b.mask].used {
		b.lost++
		b.next++
	}
	b.flushInOrder(deliver)
}

func (b *ReorderBuffer) flushInOrder(deliver func([]byte, time.Time)) {
	for {
		s := &b.slots[b.next&b.mask]
		if !s.used || s.seq != b.next {
			return
		}
		s.used = false
		b.held--
		b.next++
		deliver(s.buf, s.arrival)
	}
}

func (b *ReorderBuffer) oldest() time.Time {
	var t time.Time
	for i := range b.slots {
		if s := &b.slots[i]; s.used && (t.IsZero() || s.arrival.Before(t)) {
			t = s.arrival
		}
	}
	return t
}
