package e2e

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// gstWHEP runs test/peers/gst_whep_client.py (GStreamer's webrtcbin) on a
// WHEP URL for seconds and returns what it printed.
func gstWHEP(t *testing.T, url string, seconds int) string {
	t.Helper()
	out, err := runProcess("/usr/bin/python3", gstWHEPScript(), "--url", url, "--seconds", fmt.Sprint(seconds))
	if err != nil {
		t.Fatalf("the GStreamer WHEP client: %v %s", err, out)
	}
	return out
}

// gstWHEPScript is test/peers/gst_whep_client.py.
func gstWHEPScript() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "peers", "gst_whep_client.py")
}

// TestWebRTCLeaseEndToEnd: a business backend leases a camera channel's
// stream for protocol webrtc and hands the WHEP URL to a viewer
// (GStreamer's webrtcbin); the engine's on_play checks the URL's ticket
// with the control plane as for every other protocol: the viewer decodes
// the camera's H.264, and the URL without its ticket, with a tampered
// one, or of a lease that does not cover WebRTC is refused.
func TestWebRTCLeaseEndToEnd(t *testing.T) {
	bin := svcbin.Build(t)
	cp := startControlNode(t, nil)
	cam := startCamera(t)
	cp.startMediaHost(bin, "media-1")
	src := fmt.Sprintf("rtsp://cam:camPa55word@127.0.0.1:%d/h264", cam.port)
	var ch struct{ ChannelID string }
	if st := cp.call("POST", "/api/v2/channels", map[string]any{"name": "Door camera", "protocol": "rtsp", "sourceUrl": src,
		"app": "live", "stream": "door", "mediaServerId": "media-1"}, &ch); st != 200 {
		t.Fatalf("create channel: %d", st)
	}
	be := backend{t: t, api: cp.api, token: cp.newToken("channels.view", "streams.view", "streams.play", "channels.manage")}
	if st, body := be.call("POST", "/api/v2/third-party/channels/"+ch.ChannelID+"/start", nil, nil); st != 200 {
		t.Fatalf("start: %d %s", st, body)
	}
	testkit.Eventually(t, 60*time.Second, "the stream to be Online", func() bool {
		var ss struct{ Total int }
		be.call("GET", "/api/v2/third-party/streams?streamId=door&state=Online", nil, &ss)
		return ss.Total == 1
	})
	var l lease
	if st, body := be.call("POST", "/api/v2/third-party/channels/"+ch.ChannelID+"/playback-lease",
		map[string]any{"protocols": []string{"webrtc"}, "leaseSeconds": 60}, &l); st != 200 || len(l.Sources) != 1 ||
		l.Sources[0].Protocol != "webrtc" || !strings.Contains(l.Sources[0].URL, "/live/door/whep?svc_ticket=") {
		t.Fatalf("webrtc lease: %d %s", st, body)
	}
	// The camera sends H.264 + AAC, as its media server reported: the hint
	// says this stream's audio stays out of WebRTC.
	if !strings.HasPrefix(l.Sources[0].Hint, "This stream's audio is AAC, which WebRTC cannot carry") {
		t.Fatalf("the webrtc source's hint does not note this stream's AAC: %q", l.Sources[0].Hint)
	}
	whep := l.Sources[0].URL
	out := gstWHEP(t, whep, 8)
	var frames, width, height, deleted int
	for _, line := range strings.Split(out, "\n") {
		fmt.Sscanf(line, "frames %d width %d height %d", &frames, &width, &height)
		fmt.Sscanf(line, "deleted %d", &deleted)
	}
	if frames < 50 || width != 320 || height != 240 || deleted != 200 {
		t.Fatalf("the leased WHEP URL played %d frames of %dx%d, DELETE %d: %s", frames, width, height, deleted, out)
	}
	var flv lease
	if st, body := be.call("POST", "/api/v2/third-party/channels/"+ch.ChannelID+"/playback-lease", map[string]any{"leaseSeconds": 60}, &flv); st != 200 {
		t.Fatalf("lease: %d %s", st, body)
	}
	ticket := whep[strings.Index(whep, "svc_ticket=")+len("svc_ticket="):]
	refused := map[string]string{
		"no ticket":       whep[:strings.Index(whep, "?")],
		"tampered ticket": strings.Replace(whep, ticket, ticket[:len(ticket)-2]+"AA", 1),
		"a lease without webrtc": strings.Replace(flv.Sources[0].URL[:strings.Index(flv.Sources[0].URL, "?")], ".live.flv", "/whep", 1) +
			flv.Sources[0].URL[strings.Index(flv.Sources[0].URL, "?"):],
	}
	for name, u := range refused {
		if out := gstWHEP(t, u, 3); !strings.Contains(out, "error WHEP answered 403") || !strings.Contains(out, "play_denied") {
			t.Fatalf("%s: the WHEP offer was not refused with 403 play_denied: %s", name, out)
		}
	}
}
