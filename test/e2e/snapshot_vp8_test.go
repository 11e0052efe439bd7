package e2e

import (
	"bytes"
	"fmt"
	"image/jpeg"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// TestSnapshotOfVP8Channel: a channel whose camera sends VP8 and Opus (a
// GStreamer RTSP camera with vp8enc, the codecs a WebRTC publisher sends)
// gets its scheduled snapshot: the control plane grabs a keyframe over
// HTTP-fMP4, which carries VP8 (HTTP-FLV does not), and ffmpeg decodes it
// into a JPEG of the camera's size.
func TestSnapshotOfVP8Channel(t *testing.T) {
	bin := svcbin.Build(t)
	cp := startControlNode(t, nil)
	cam := startCamera(t)
	cp.startMediaHost(bin, "media-1")
	var ch struct{ ChannelID string }
	if st := cp.call("POST", "/api/v2/channels", map[string]any{"name": "VP8 camera", "protocol": "rtsp",
		"sourceUrl": fmt.Sprintf("rtsp://cam:camPa55word@127.0.0.1:%d/vp8", cam.port), "app": "live", "stream": "vp8cam",
		"mediaServerId": "media-1"}, &ch); st != 200 {
		t.Fatalf("create channel: %d", st)
	}
	be := backend{t: t, api: cp.api, token: cp.newToken("channels.view", "streams.view", "streams.play", "channels.manage")}
	if st, body := be.call("POST", "/api/v2/third-party/channels/"+ch.ChannelID+"/start", nil, nil); st != 200 {
		t.Fatalf("start: %d %s", st, body)
	}
	testkit.Eventually(t, 60*time.Second, "the VP8 stream Online", func() bool {
		var ss struct{ Total int }
		be.call("GET", "/api/v2/third-party/streams?streamId=vp8cam&state=Online", nil, &ss)
		return ss.Total == 1
	})
	if st := cp.call("PUT", "/api/v2/channels/"+ch.ChannelID+"/snapshots/settings", map[string]any{"enabled": true, "intervalSeconds": 10}, nil); st != 200 {
		t.Fatalf("snapshot settings: %d", st)
	}
	var snaps struct {
		LatestAt      *time.Time
		Width, Height int
	}
	testkit.Eventually(t, 90*time.Second, "a snapshot of the VP8 stream", func() bool {
		be.call("GET", "/api/v2/channels/"+ch.ChannelID+"/snapshots", nil, &snaps)
		return snaps.LatestAt != nil
	})
	st, h, img := get(t, cp.api+"/api/v2/channels/"+ch.ChannelID+"/snapshots/latest", be.token)
	if st != 200 || h.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("the snapshot: %d %v", st, h)
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(img))
	if err != nil || cfg.Width != 320 || cfg.Height != 240 || snaps.Width != 320 || snaps.Height != 240 {
		t.Fatalf("the snapshot: %dx%d (overview %dx%d), %v; want the camera's 320x240", cfg.Width, cfg.Height, snaps.Width, snaps.Height, err)
	}
	t.Logf("VP8 snapshot: %d-byte JPEG, %dx%d", len(img), cfg.Width, cfg.Height)
}
