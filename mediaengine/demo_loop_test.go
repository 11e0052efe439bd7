package mediaengine

import (
	"strconv"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/internal/mediaprobe"
)

// TestDemoLoopHasNoGap reads the demo stream's HTTP-FLV with ffprobe across
// the clip's loop point (it loops every 10 s; 13 s of reading cross it at
// least once) and finds no step between consecutive video DTS larger than
// one frame (40 ms, plus FLV's millisecond rounding): the loop once skipped
// two frames because the clip's audio outlasts its video.
func TestDemoLoopHasNoGap(t *testing.T) {
	te := startEngine(t, nil)
	waitStreamReady(t, te, "live", "demo", 5*time.Second)
	r := mediaprobe.Probe(t, te.mediaURL("/live/demo.live.flv"), 13)
	video := -1
	for _, s := range r.Streams {
		if s.CodecType == "video" {
			video = s.Index
		}
	}
	if video < 0 {
		t.Fatalf("no video: %s", r.Describe())
	}
	first, prev := -1.0, -1.0
	worst := 0.0
	for _, p := range r.Packets {
		if p.StreamIndex != video {
			continue
		}
		dts, err := strconv.ParseFloat(p.DTSTime, 64)
		if err != nil {
			continue
		}
		if first < 0 {
			first = dts
		}
		if prev >= 0 {
			worst = max(worst, dts-prev)
		}
		prev = dts
	}
	if prev-first < 12 {
		t.Fatalf("read %.2f s of video, want at least 12 s to cross the loop point", prev-first)
	}
	if worst > 0.0415 {
		t.Fatalf("video DTS jumps by %.3f s, more than one 40 ms frame", worst)
	}
}
