package rtpcodec

import (
	"testing"
	"time"
)

// Audio timestamps only go forward: a packet that would step back (a
// replay, a misnumbered source) is dropped, not published out of order.
func TestAudioTimestampsStayMonotonic(t *testing.T) {
	f := Format{PayloadType: 0, ClockRate: 8000}
	track, _ := f.Track(0)
	d, c := newDepack(t, f, track)
	for i, ts := range []uint32{1600, 1760, 1600, 1760, 1920} {
		d.Decode(pkt(uint16(i), ts, false, make([]byte, 160)), t0.Add(time.Duration(i)*20*time.Millisecond))
	}
	if len(c.frames) != 3 || d.Stats().Dropped.Load() != 2 {
		t.Fatalf("%d frames, %d dropped", len(c.frames), d.Stats().Dropped.Load())
	}
	for i := 1; i < len(c.frames); i++ {
		if c.frames[i].DTS <= c.frames[i-1].DTS {
			t.Fatalf("frame %d: %v after %v", i, c.frames[i].DTS, c.frames[i-1].DTS)
		}
	}
}
