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
