package mediaengine

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/internal/peers"
	"github.com/svcplatform/svc/shared/engineapi"
)

// TestHLSViewerSessions checks that an HLS viewer (svc_viewer) keeps one
// session across master playlist reloads, that viewers are listed as
// players, and that a kicked viewer's session is gone.
func TestHLSViewerSessions(t *testing.T) {
	te := startEngine(t, nil)
	master := func(query string) string {
		resp, err := http.Get(te.mediaURL("/live/demo/hls.m3u8?" + query))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("master playlist: %d %v", resp.StatusCode, resp.Header)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "hls/") {
				return line
			}
		}
		t.Fatalf("no media playlist in %s", b)
		return ""
	}
	a1 := master("svc_viewer=a&svc_ticket=T")
	a2 := master("svc_viewer=a&svc_ticket=T")
	b := master("svc_viewer=b&svc_ticket=T")
	if a1 != a2 || a1 == b {
		t.Fatalf("sessions: a %q then %q, b %q", a1, a2, b)
	}
	var list engineapi.PlayerList
	te.control(t, "GET", engineapi.PathPlayers+"?protocol=hls", nil, &list)
	if len(list.Players) != 2 || list.Players[0].Viewer != "a" || list.Players[1].Viewer != "b" {
		t.Fatalf("hls players %+v", list.Players)
	}
	resp, err := http.Get(te.mediaURL("/live/demo/" + a1))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "#EXT-X-MAP") || !strings.Contains(string(body), ".m4s") {
		t.Fatalf("media playlist %d:\n%s", resp.StatusCode, body)
	}
	var res engineapi.KickResult
	te.control(t, "POST", engineapi.PathPlayersKick, engineapi.KickRequest{PlayerID: list.Players[0].ID}, &res)
	resp, err = http.Get(te.mediaURL("/live/demo/" + a1))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if res.Kicked != 1 || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("after kicking viewer a: kicked %d, playlist %d", res.Kicked, resp.StatusCode)
	}
}

// TestVP8RefusedByFLVAndMPEGTS: ffmpeg publishes VP8 and Opus over RTSP
// to an engine whose HLS segments are MPEG-TS. Neither MPEG-TS nor FLV has
// a VP8 (or Opus) format: the HLS master playlist and HTTP-FLV are refused
// with 406 no_common_codec saying why, not 404 as if the stream were
// missing nor 503 as if it might come, while HTTP-fMP4 plays the stream.
func TestVP8RefusedByFLVAndMPEGTS(t *testing.T) {
	te := startEngine(t, func(c *engineapi.Config) { noDemo(c); c.HLS.Format = "ts" })
	peers.Start(t, "ffmpeg", "-hide_banner", "-loglevel", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25",
		"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "60", "-c:v", "libvpx", "-deadline", "realtime", "-g", "25",
		"-c:a", "libopus", "-f", "rtsp", "-rtsp_transport", "tcp", te.rtspURL("live/vp8"))
	if got := trackCodecs(waitStreamReady(t, te, "live", "vp8", 30*time.Second)); got != "video:VP8,audio:Opus" {
		t.Fatalf("the published stream has %s, want video:VP8,audio:Opus", got)
	}
	for _, c := range []struct{ name, path, says string }{
		{"HLS (MPEG-TS)", "/live/vp8/hls.m3u8", "hls.format fmp4"},
		{"HTTP-FLV", "/live/vp8.live.flv", "FLV has no VP8"},
	} {
		resp, err := http.Get(te.mediaURL(c.path))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotAcceptable || !strings.Contains(string(body), `"no_common_codec"`) || !strings.Contains(string(body), c.says) {
			t.Fatalf("%s of a VP8 stream: %d %s; want 406 no_common_codec saying %q", c.name, resp.StatusCode, body, c.says)
		}
	}
	if got := probePackets(t, te.mediaURL("/live/vp8.live.mp4"), 100); got != "audio:opus,video:vp8" {
		t.Fatalf("HTTP-fMP4 of the VP8 stream carries %q", got)
	}
}
