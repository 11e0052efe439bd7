package mediaengine

import (
	"testing"

	"github.com/svcplatform/svc/shared/engineapi"

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
	ts := startEngine(t, func(c *engineapi.Config) { c.HLS.Format = "ts" })
	for _, tc := range []struct {
		name string
		e    *testEngine
		path string
	}{
		{"http-flv", te, "/live/demo.live.flv"},
		{"http-fmp4", te, "/live/demo.live.mp4"},
		{"hls-fmp4", te, "/live/demo/hls.m3u8?svc_viewer=v1"},
		{"hls-ts", ts, "/live/demo/hls.m3u8?svc_viewer=v2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := mediaprobe.Probe(t, tc.e.mediaURL(tc.path), 11)
			r.Check(t, demoWant)
		})
	}
}
