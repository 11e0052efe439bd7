package rtpcodec

import (
	"testing"
	"time"
)

func TestTimeline(t *testing.T) {
	type in struct {
		ts      uint32
		arrival time.Duration
	}
	tests := []struct {
		name string
		rate int
		in   []in
		want []time.Duration
	}{
		{"steady", 90000, []in{{1000, 0}, {4600, 40 * time.Millisecond}, {8200, 80 * time.Millisecond}},
			[]time.Duration{0, 40 * time.Millisecond, 80 * time.Millisecond}},
		{"wrap-around", 90000, []in{{0xffffffff - 3599, 0}, {0, 40 * time.Millisecond}, {3600, 80 * time.Millisecond}},
			[]time.Duration{0, 40 * time.Millisecond, 80 * time.Millisecond}},
		{"B-frames go back a little", 90000, []in{{0, 0}, {10800, 40 * time.Millisecond}, {3600, 80 * time.Millisecond}},
			[]time.Duration{0, 120 * time.Millisecond, 40 * time.Millisecond}},
		{
			"forward jump continues from arrival",
			48000,
			[]in{{0, 0}, {1024, 21 * time.Millisecond}, {1024 + 48000*3600, 42 * time.Millisecond}, {2048 + 48000*3600, 63 * time.Millisecond}},
			[]time.Duration{0, 21333333, 42333333, 63666666},
		},
		{
			"a clock 2 s back continues from arrival",
			90000,
			[]in{{900000, 0}, {903600, 40 * time.Millisecond}, {903600 - 180000, 80 * time.Millisecond}, {907200 - 180000, 120 * time.Millisecond}},
			[]time.Duration{0, 40 * time.Millisecond, 80 * time.Millisecond, 120 * time.Millisecond},
		},
		{"clock reset to zero continues from arrival", 90000, []in{{900000, 0}, {903600, 40 * time.Millisecond}, {0, 80 * time.Millisecond}, {3600, 120 * time.Millisecond}},
			[]time.Duration{0, 40 * time.Millisecond, 80 * time.Millisecond, 120 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := NewTimeline(NewStreamClock(), tt.rate)
			for i, p := range tt.in {
				if got := tl.Position(p.ts, t0.Add(p.arrival)); got != tt.want[i] {
					t.Errorf("packet %d: %v, want %v", i, got, tt.want[i])
				}
			}
		})
	}
}

// Two tracks of one stream share the origin; a sender report aligns a
// track by the sender's clock instead of by arrival.
func TestTimelineSharedOriginAndSenderReports(t *testing.T) {
	clock := NewStreamClock()
	video := NewTimeline(clock, 90000)
	audio := NewTimeline(clock, 48000)
	ntp := time.Unix(1_600_000_000, 0)
	// The sender says: video RTP 90000 and audio RTP 0 are both at ntp.
	video.SenderReport(ntp, 90000, t0)
	audio.SenderReport(ntp, 0, t0)
	// Video's first packet (RTP 90000+9000 = ntp+100ms) arrives at t0+100ms.
	if got := video.Position(99000, t0.Add(100*time.Millisecond)); got != 0 {
		t.Fatalf("video starts at %v", got)
	}
	// Audio's first packet is ntp+200ms but arrives late (t0+350ms); the
	// sender report still places it 100ms after the video frame.
	if got := audio.Position(9600, t0.Add(350*time.Millisecond)); got != 100*time.Millisecond {
		t.Fatalf("audio starts at %v, want 100ms", got)
	}
	// Without sender reports the arrival time places a track.
	other := NewTimeline(clock, 8000)
	if got := other.Position(12345, t0.Add(500*time.Millisecond)); got != 400*time.Millisecond {
		t.Fatalf("arrival-placed track starts at %v", got)
	}
}
