package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// pushStream has ffmpeg publish a lavfi test pattern (320x240 at 25 fps,
// H.264 with B-frames, and AAC) in real time to an RTSP URL over TCP, the
// way an encoder pushes to a media server.
func pushStream(t *testing.T, url string, seconds int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-re",
		"-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100",
		"-t", fmt.Sprint(seconds), "-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", "25", "-pix_fmt", "yuv420p",
		"-c:a", "aac", "-b:a", "64k", "-f", "rtsp", "-rtsp_transport", "tcp", url)
	if err := cmd.Start(); err != nil {
		t.Fatalf("ffmpeg is required (scripts/install-deps.sh test): %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// TestPushedStreamLeaseEndToEnd is the push flow with real processes: a
// control node, an enrolled agent running the engine, ffmpeg pushing over
// RTSP with a managed Digest credential, and a business backend's
// least-privilege token that finds the stream, leases it by its locator
// and plays every source with ffprobe: HTTP-FLV, HTTP-fMP4, HLS and RTSP
// over TCP with the lease's ticket in place of credentials.
func TestPushedStreamLeaseEndToEnd(t *testing.T) {
	bin := svcbin.Build(t)
	cp := startControlNode(t, nil)
	cp.startMediaHost(bin, "media-1")
	be := backend{t: t, api: cp.api, token: cp.newToken("streams.view", "streams.play", "nodes.view")}
	// The media servers, in contract B's list envelope.
	var servers struct {
		Page, PageSize, Total int
		Rows                  []struct{ MediaServerID, RtspAddr string }
	}
	if st, body := be.call("GET", "/api/v2/third-party/media-servers", nil, &servers); st != 200 || servers.Page != 1 || servers.PageSize != 50 ||
		servers.Total != 1 || len(servers.Rows) != 1 || servers.Rows[0].RtspAddr == "" {
		t.Fatalf("third-party media servers: %d %s", st, body)
	}
	rtspAddr := servers.Rows[0].RtspAddr

	// Leasing a stream nobody publishes yet is refused as not ready.
	req := map[string]any{"app": "live", "streamId": "push-cam", "leaseSeconds": 60}
	if st, body := be.call("POST", "/api/v2/third-party/streams/playback-lease", req, nil); st != 409 || !strings.Contains(string(body), "stream_not_ready") {
		t.Fatalf("lease of an absent stream: %d %s", st, body)
	}
	// The operator gives the encoder a managed RTSP credential; the
	// encoder pushes with Digest.
	if st := cp.call("POST", "/api/v2/security/rtsp-auth", map[string]any{"mediaServerId": "media-1", "username": "encoder", "password": "encoder-Pa55word"}, nil); st != 200 {
		t.Fatalf("RTSP credential: %d", st)
	}
	pushStream(t, "rtsp://encoder:encoder-Pa55word@"+rtspAddr+"/live/push-cam", 120)
	var streams struct {
		Total int
		Rows  []struct {
			ChannelID, Origin string
			Tracks            []struct {
				Kind string
				Fps  float64
			}
		}
	}
	testkit.Eventually(t, 30*time.Second, "the pushed stream Online", func() bool {
		be.call("GET", "/api/v2/third-party/streams?streamId=push-cam&state=Online", nil, &streams)
		return streams.Total == 1
	})
	s := streams.Rows[0]
	if s.ChannelID != "" || s.Origin != "rtsp-push" {
		t.Fatalf("pushed stream %+v", s)
	}
	fps := 0.0
	for _, tr := range s.Tracks {
		if tr.Kind == "video" {
			fps = tr.Fps
		}
	}
	if fps != 25 {
		t.Fatalf("the pushed stream's video is listed at %v fps, want 25: %+v", fps, s)
	}

	// Lease it by its locator and play every source.
	var l struct {
		lease
		ResourceKind, ResourceID, MediaServerID string
	}
	if st, body := be.call("POST", "/api/v2/third-party/streams/playback-lease", req, &l); st != 200 || len(l.Sources) != 4 ||
		l.ResourceKind != "live" || l.ResourceID != "media-1/__defaultVhost__/live/push-cam" || l.MediaServerID != "media-1" {
		t.Fatalf("stream lease: %d %s", st, body)
	}
	for _, src := range l.Sources {
		if want := map[string]bool{"http-flv": true, "http-fmp4": true, "hls": true, "rtsp": true}; !want[src.Protocol] {
			t.Fatalf("unexpected source %+v", src)
		}
		if src.Protocol == "rtsp" && !strings.HasPrefix(src.URL, "rtsp://"+rtspAddr+"/live/push-cam?svc_ticket=") {
			t.Fatalf("RTSP source %s, want the engine's RTSP address %s", src.URL, rtspAddr)
		}
		r, err := probe(t, src.URL, 5)
		if err != nil {
			t.Fatalf("%s: %v", src.Protocol, err)
		}
		if r.codec != "h264" || r.width != 320 || r.height != 240 || r.span < 3.9 || r.packets < 100 || !r.audio {
			t.Fatalf("%s played %+v", src.Protocol, r)
		}
	}
	// Without the ticket, or with a tampered one, neither HTTP nor RTSP
	// plays; the RTSP refusal is a Digest challenge.
	for _, src := range l.Sources {
		if src.Protocol != "http-flv" && src.Protocol != "rtsp" {
			continue
		}
		bare := src.URL[:strings.Index(src.URL, "?")]
		if _, err := probe(t, bare, 1); err == nil {
			t.Fatalf("%s played without a ticket", src.Protocol)
		}
		tampered := src.URL[:len(src.URL)-1] + map[bool]string{true: "A", false: "B"}[!strings.HasSuffix(src.URL, "A")]
		if _, err := probe(t, tampered, 1); err == nil {
			t.Fatalf("%s played with a tampered ticket", src.Protocol)
		}
	}
	// The RTSP player shows in the players listing under the lease.
	var players struct {
		Rows []struct{ Protocol, LeaseID string }
	}
	done := make(chan error, 1)
	for _, src := range l.Sources {
		if src.Protocol == "rtsp" {
			cmd := exec.Command("ffmpeg", "-v", "error", "-rtsp_transport", "tcp", "-i", src.URL, "-t", "20", "-f", "null", "-")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill() })
			go func() { done <- cmd.Wait() }()
		}
	}
	testkit.Eventually(t, 10*time.Second, "the RTSP player listed under its lease", func() bool {
		cp.call("GET", "/api/v2/streams/players?mediaServerId=media-1", nil, &players)
		for _, p := range players.Rows {
			if p.Protocol == "rtsp" && p.LeaseID == l.LeaseID {
				return true
			}
		}
		return false
	})
	// Deleting the lease with disconnect cuts the RTSP player too.
	if st, body := be.call("DELETE", "/api/v2/third-party/playback-leases/"+l.LeaseID+"?disconnect=true", nil, nil); st != 200 {
		t.Fatalf("delete: %d %s", st, body)
	}
	select {
	case <-done:
	case <-time.After(6 * time.Second):
		t.Fatal("the RTSP player of a deleted lease was not cut within 5 s")
	}
}
