package rtpcodec

import (
	"testing"
	"time"
)

func TestDTSEstimator(t *testing.T) {
	const step = 40 * time.Millisecond
	tests := []struct {
		name  string
		order []int // presentation index of each frame, in decoding order
		depth int
	}{
		{"no B-frames", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 0},
		{"I P B B", []int{0, 3, 1, 2, 6, 4, 5, 9, 7, 8, 12, 10, 11}, 1},
		{"B-pyramid", []int{0, 4, 2, 1, 3, 8, 6, 5, 7, 12, 10, 9, 11}, 2},
		{"open GOP with leading B-frames", []int{2, 0, 1, 5, 3, 4, 8, 6, 7}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewDTSEstimator(90000)
			pts := make([]time.Duration, len(tt.order))
			for i, n := range tt.order {
				pts[i] = time.Duration(n) * step
			}
			e.Prime(pts[:probeFrames])
			var last time.Duration
			for i, p := range pts {
				dts := e.Next(p)
				if dts > p {
					t.Errorf("frame %d: DTS %v after PTS %v", i, dts, p)
				}
				if i > 0 && dts-last != step {
					t.Errorf("frame %d: DTS step %v", i, dts-last)
				}
				if tt.depth == 0 && dts != p {
					t.Errorf("frame %d: DTS %v != PTS %v without reordering", i, dts, p)
				}
				last = dts
			}
			if e.Depth() != tt.depth {
				t.Errorf("depth %d, want %d", e.Depth(), tt.depth)
			}
		})
	}
}

// A reordering deeper than the probe saw grows the depth and keeps DTS
// monotonic.
func TestDTSEstimatorGrowsDepth(t *testing.T) {
	e := NewDTSEstimator(90000)
	e.Prime([]time.Duration{0, 40, 80})
	var last time.Duration = -1
	for i, n := range []int{0, 1, 2, 3, 7, 5, 4, 6, 8, 11, 9, 10} {
		dts := e.Next(time.Duration(n) * time.Millisecond * 40)
		if dts <= last {
			t.Fatalf("frame %d: DTS %v not after %v", i, dts, last)
		}
		last = dts
	}
	if e.Depth() < 2 {
		t.Fatalf("depth %d", e.Depth())
	}
}
