package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/test/mseplay"
	"github.com/svcplatform/svc/test/peers/chromium"
	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// TestRecordingPlaysInChromiumMSE: a recorded file's leased http-fmp4
// URL, asked from 1 s with ?start=, plays in headless Chromium through
// Media Source Extensions from a page of another origin (the media port's
// CORS): the SourceBuffer takes the init segment's codecs, frames are
// decoded and presented at the camera's size, and currentTime advances.
// The same ticket on another file is refused, and the page can read the
// refusal.
func TestRecordingPlaysInChromiumMSE(t *testing.T) {
	if err := mseplay.CheckChromium(); err != nil {
		t.Fatal(err)
	}
	bin := svcbin.Build(t)
	cp := startControlNode(t, nil)
	cam := startCamera(t)
	cp.startMediaHost(bin, "media-1")
	var ch struct{ ChannelID string }
	if st := cp.call("POST", "/api/v2/channels", map[string]any{"name": "MSE camera", "protocol": "rtsp",
		"sourceUrl": fmt.Sprintf("rtsp://cam:camPa55word@127.0.0.1:%d/h264", cam.port), "app": "live", "stream": "mse", "mediaServerId": "media-1"}, &ch); st != 200 {
		t.Fatalf("create channel: %d", st)
	}
	be := backend{t: t, api: cp.api, token: cp.newToken("recordings.view", "recordings.manage", "recordings.play", "channels.manage")}
	if st, body := be.call("POST", "/api/v2/recording/start", map[string]any{"channelId": ch.ChannelID, "segmentSeconds": 4}, nil); st != 200 {
		t.Fatalf("start recording: %d %s", st, body)
	}
	if st, body := be.call("POST", "/api/v2/third-party/channels/"+ch.ChannelID+"/start", nil, nil); st != 200 {
		t.Fatalf("channel start: %d %s", st, body)
	}
	var files struct {
		Total int
		Rows  []recordingFile
	}
	testkit.Eventually(t, 120*time.Second, "a recorded file", func() bool {
		be.call("GET", "/api/v2/recording/files?channelId="+ch.ChannelID, nil, &files)
		return files.Total >= 1
	})
	f := files.Rows[0]
	if f.DurationMs < 3000 {
		t.Fatalf("the first file lasts %d ms; files close at the first keyframe after 4 s", f.DurationMs)
	}
	var ls lease
	if st, body := be.call("POST", "/api/v2/third-party/recordings/"+f.FileID+"/playback-lease", map[string]any{"protocols": []string{"http-fmp4"}},
		&ls); st != 200 || len(ls.Sources) == 0 || ls.Sources[0].Protocol != "http-fmp4" {
		t.Fatalf("recording lease: %d %s", st, body)
	}
	src := ls.Sources[0].URL

	h, err := mseplay.Serve()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	startProcess(t, chromium.Path, h.BrowserArgs(t.TempDir())...)
	// Generous bounds: the first play includes Chromium's start, and this
	// machine's two cores are shared; the page itself waits for the
	// conditions, not for a fixed window.
	res, err := h.Play(mseplay.Job{ID: 1, URL: src + "&start=1", Start: 1, PlaySeconds: 1, TimeoutMs: 60000}, 150*time.Second)
	if err != nil {
		t.Fatalf("playing %s: %v", src, err)
	}
	if !strings.HasPrefix(res.Codecs, "avc1.42") || !strings.Contains(res.Codecs, "mp4a") {
		t.Fatalf("codecs from the init segment %q, want H.264 baseline and AAC", res.Codecs)
	}
	if res.FrameMs <= 0 || res.FramesDecoded < 2 || res.Width != 320 || res.Height != 240 {
		t.Fatalf("Chromium decoded %d frames at %dx%d (first presented at %.0f ms): %+v", res.FramesDecoded, res.Width, res.Height, res.FrameMs, res)
	}
	if res.Advanced < 1 {
		t.Fatalf("currentTime advanced %.2f s, want 1: %+v", res.Advanced, res)
	}
	t.Logf("first frame %.0f ms after the request (headers %.0f, first fragment in %.0f, appended %.0f); %d frames decoded, %.2f s played",
		res.FrameMs, res.HeadersMs, res.FragmentMs, res.AppendedMs, res.FramesDecoded, res.Advanced)

	// The ticket is bound to its file: another file id is refused, and the
	// page (another origin) reads the status.
	other := strings.Replace(src, f.FileID, uuid.NewString(), 1)
	if _, err := h.Play(mseplay.Job{ID: 2, URL: other + "&start=1", TimeoutMs: 30000}, 90*time.Second); err == nil ||
		!strings.Contains(err.Error(), "GET answered 403") {
		t.Fatalf("the ticket on another file: %v, want the page to read 403", err)
	}
}
