package rtpcodec

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"
)

func TestReorderBuffer(t *testing.T) {
	tests := []struct {
		name       string
		in         []uint16
		gapAt      int // index after which time jumps past MaxDelay (-1: never)
		want       []uint16
		lost, late uint64
	}{
		{"in order", []uint16{1, 2, 3, 4}, -1, []uint16{1, 2, 3, 4}, 0, 0},
		{"swapped", []uint16{1, 3, 2, 4}, -1, []uint16{1, 2, 3, 4}, 0, 0},
		{"duplicate and late", []uint16{1, 2, 2, 3, 1}, -1, []uint16{1, 2, 3}, 0, 2},
		{"wrap-around", []uint16{65534, 0, 65535, 1}, -1, []uint16{65534, 65535, 0, 1}, 0, 0},
		{"loss given up after the delay", []uint16{1, 3, 4, 5}, 2, []uint16{1, 3, 4, 5}, 1, 0},
		{"loss given up when the window fills", []uint16{1, 3, 4, 5, 6, 7, 8, 9, 10, 11}, -1, []uint16{1, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 1, 0},
		{"source restarts numbering", []uint16{100, 101, 40000, 40001}, -1, []uint16{100, 101, 40000, 40001}, 0, 0},
		{"source restarts numbering a little lower", []uint16{500, 501, 100, 101, 102, 103, 104, 105, 106, 107, 108},
			-1, []uint16{500, 501, 107, 108}, 0, 7},
		{"late packets not in a run stay late", []uint16{500, 501, 100, 502, 101, 503, 102, 504, 103, 505, 104, 506, 105, 507, 106, 508, 107},
			-1, []uint16{500, 501, 502, 503, 504, 505, 506, 507, 508}, 0, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewReorderBuffer(8, 50*time.Millisecond)
			var got []uint16
			now := t0
			for i, seq := range tt.in {
				raw := make([]byte, 20)
				raw[0] = 0x80
				binary.BigEndian.PutUint16(raw[2:], seq)
				if i == tt.gapAt {
					now = now.Add(time.Second)
				}
				b.Push(raw, now, func(p []byte, _ time.Time) { got = append(got, binary.BigEndian.Uint16(p[2:])) })
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("delivered %v, want %v", got, tt.want)
			}
			if b.Lost() != tt.lost || b.Late() != tt.late {
				t.Errorf("lost %d late %d, want %d %d", b.Lost(), b.Late(), tt.lost, tt.late)
			}
		})
	}
}

func TestSequenceTrackerRestartsLower(t *testing.T) {
	var s sequenceTracker
	for seq := uint16(500); seq < 510; seq++ {
		if lost, ok := s.advance(seq); !ok || lost != 0 {
			t.Fatalf("%d: lost %d ok %v", seq, lost, ok)
		}
	}
	// A duplicate, then a payloader restarted 400 numbers lower.
	if _, ok := s.advance(505); ok {
		t.Fatal("a duplicate was taken")
	}
	for seq := uint16(100); seq < 100+restartRun-1; seq++ {
		if _, ok := s.advance(seq); ok {
			t.Fatalf("%d taken before the run was long enough", seq)
		}
	}
	if lost, ok := s.advance(100 + restartRun - 1); !ok || lost != 1 {
		t.Fatalf("the run's last packet: lost %d ok %v, want a restart", lost, ok)
	}
	if lost, ok := s.advance(100 + restartRun); !ok || lost != 0 {
		t.Fatalf("after the restart: lost %d ok %v", lost, ok)
	}
}
