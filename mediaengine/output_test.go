package mediaengine

import (
	"testing"

	"github.com/svcplatform/svc/mediaengine/internal/mediaprobe"
)

// demoWant is what ffprobe must find in every output of the demo clip.
var demoWant = mediaprobe.Want{VideoCodec: "h264", Width: 640, Height: 360, FPS: 25, AudioCodec: "aac",
	SampleRate: 48000, Channels: 2, AudioFrameSamples: 1024, MinSeconds: 10}

// TestOutputsPlayInFFprobe reads every output of the demo stream with
// ffprobe for 11 s, in parallel, and checks codecs, size, frame counts and
// timestamps.
func TestOutputsPlayInFFprobe(t *testing.T) {
	te := startEngine(t, nil)
	for _, tc := range []struct {
		name, path string
	}{
		{"http-flv", "/live/demo.live.flv"},
		{"http-fmp4", "/live/demo.live.mp4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := mediaprobe.Probe(t, te.mediaURL(tc.path), 11)
			r.Check(t, demoWant)
		})
	}
}
