package main

import (
	"testing"
	"time"
)

// pkt is one RTP packet of a test sequence.
type pkt struct {
	seq     uint16
	ts      uint32
	marker  bool
	payload []byte
}

var (
	fuStart = []byte{0x7c, 0x85, 1} // FU-A, start bit, IDR
	fuMid   = []byte{0x7c, 0x05, 2}
	fuEnd   = []byte{0x7c, 0x45, 3}
	pMidFU  = []byte{0x7c, 0x01, 4} // FU-A continuation of a non-IDR slice
	pSlice  = []byte{0x41, 5}       // single NAL, non-IDR slice
	// STAP-A with SPS (2 bytes), PPS (2 bytes) and an IDR slice (2 bytes).
	stapIDR = []byte{0x78, 0, 2, 0x67, 1, 0, 2, 0x68, 2, 0, 2, 0x65, 3}
	stapSPS = []byte{0x78, 0, 2, 0x67, 1, 0, 2, 0x68, 2}
)

// TestFirstFrame: the first showable frame is the first IDR picture
// whose packets all arrived; a frame joined in its middle, a P-frame and
// an IDR frame with a lost packet do not count.
func TestFirstFrame(t *testing.T) {
	tests := []struct {
		name string
		pkts []pkt
		want int // index of the packet that completes it, -1 for none
	}{
		{"fragmented IDR", []pkt{{10, 0, false, stapSPS}, {11, 0, false, fuStart}, {12, 0, false, fuMid}, {13, 0, true, fuEnd}}, 3},
		{"one-packet IDR", []pkt{{1, 0, true, stapIDR}}, 0},
		{"joined mid-frame, then a P-frame, then an IDR", []pkt{{5, 0, false, pMidFU}, {6, 0, true, pMidFU}, {7, 3000, true, pSlice},
			{8, 6000, false, fuStart}, {9, 6000, true, fuEnd}}, 4},
		{"joined inside an IDR", []pkt{{5, 0, false, fuMid}, {6, 0, true, fuEnd}}, -1},
		{"a packet lost inside the IDR", []pkt{{1, 0, false, fuStart}, {3, 0, true, fuEnd}, {4, 3000, false, fuStart}, {5, 3000, true, fuEnd}}, 3},
		{"the previous frame's marker lost", []pkt{{1, 0, false, fuStart}, {2, 0, false, fuMid}, {4, 3000, false, fuStart}, {5, 3000, true, fuEnd}}, -1},
		{"a P-frame alone", []pkt{{1, 0, true, pSlice}, {2, 3000, true, pSlice}}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f firstFrame
			got := -1
			for i, p := range tt.pkts {
				if f.add(p.seq, p.ts, p.marker, p.payload) {
					got = i
					break
				}
			}
			if got != tt.want {
				t.Fatalf("completed at packet %d, want %d", got, tt.want)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	var hundred, twenty []time.Duration
	for i := 100; i >= 1; i-- { // unsorted on purpose
		hundred = append(hundred, time.Duration(i)*time.Millisecond)
		if i <= 20 {
			twenty = append(twenty, time.Duration(i)*time.Millisecond)
		}
	}
	for _, c := range []struct {
		d    []time.Duration
		p    float64
		want time.Duration
	}{
		{hundred, 0.5, 50 * time.Millisecond}, {hundred, 0.95, 95 * time.Millisecond}, {hundred, 0.99, 99 * time.Millisecond},
		{twenty, 0.5, 10 * time.Millisecond}, {twenty, 0.95, 19 * time.Millisecond}, {twenty, 0.99, 20 * time.Millisecond},
		{nil, 0.99, 0},
	} {
		if got := percentile(c.d, c.p); got != c.want {
			t.Errorf("p%.0f of %d samples: %s, want %s", c.p*100, len(c.d), got, c.want)
		}
	}
	if hundred[0] != 100*time.Millisecond {
		t.Fatal("percentile sorted its argument in place")
	}
}
