package mediaengine

import (
	"testing"

	"github.com/svcplatform/svc/shared/engineapi"
)

// The smoke test pulls the engine's own demo stream over its RTSP server,
// as it would a camera, and reports what it measured.
func TestSmokeTestRTSP(t *testing.T) {
	te := startEngine(t, nil)
	for _, transport := range []string{"tcp", "udp", "auto"} {
		var res engineapi.SmokeTestResult
		req := engineapi.SmokeTestRequest{URL: "rtsp://" + te.RTSPAddr().String() + "/live/demo", Transport: transport, TimeoutMs: 15000}
		if st := te.control(t, "POST", engineapi.PathSmokeTestRTSP, req, &res); st != 200 {
			t.Fatalf("%s: status %d", transport, st)
		}
		if !res.OK || res.VideoCodec != "H264" || res.Width != 640 || res.Height != 360 || res.FPS < 20 || res.FPS > 30 ||
			res.AudioCodec != "AAC" || res.TimeToFirstFrameMs <= 0 || res.TimeToFirstFrameMs > 10000 {
			t.Fatalf("%s: %+v", transport, res)
		}
		if transport != "auto" && res.Transport != transport {
			t.Fatalf("asked for %s, used %s", transport, res.Transport)
		}
	}
	// A source that is not there fails at the stage that failed, in time.
	var res engineapi.SmokeTestResult
	te.control(t, "POST", engineapi.PathSmokeTestRTSP, engineapi.SmokeTestRequest{URL: "rtsp://user:pw@127.0.0.1:1/x", TimeoutMs: 3000}, &res)
	if res.OK || res.Stage != "connect" || res.Error == "" || res.DurationMs > 5000 {
		t.Fatalf("unreachable source: %+v", res)
	}
	if st := te.control(t, "POST", engineapi.PathSmokeTestRTSP, engineapi.SmokeTestRequest{URL: "http://x/y"}, nil); st != 400 {
		t.Fatalf("a non-RTSP URL: %d", st)
	}
}
