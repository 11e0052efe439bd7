package mediaengine

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/internal/mediaprobe"
	"github.com/svcplatform/svc/mediaengine/internal/peers"
	"github.com/svcplatform/svc/shared/engineapi"
	"github.com/svcplatform/svc/test/testkit"
)

// TestAcceptanceWHIPVP8: Chromium publishes VP8 (and Opus) over WHIP; the
// hub carries VP8 as sent. HTTP-fMP4, RTSP and HLS (fMP4 segments, CODECS
// vp08) play it (ffprobe reads vp8, and decodes HLS's frames),
// a second Chromium plays it over WHEP (VP8 passed through), the
// recording's files hold vp8 and opus that ffmpeg decodes without an
// error, and HTTP-FLV, which has no VP8 or Opus format, refuses the
// stream saying so.
func TestAcceptanceWHIPVP8(t *testing.T) {
	te := startEngine(t, noDemo)
	if st := te.control(t, "POST", engineapi.PathRecordings, engineapi.StartRecordingRequest{App: "live", Stream: "vp8", SegmentSeconds: 4}, nil); st != 200 {
		t.Fatalf("start recording: %d", st)
	}
	pub := startBrowserHarness(t)
	pub.page = whipHarness
	whip := te.mediaURL("/live/vp8/whip")
	publisher := peers.StartChromium(t, "http://"+pub.addr+"/?codec=VP8&whip="+url.QueryEscape(whip))
	pub.waitReport(t, "the publisher to connect", 60*time.Second, func(r browserReport) bool { return r.State == "connected" })
	info := waitStreamReady(t, te, "live", "vp8", 30*time.Second)
	if got := trackCodecs(info); got != "video:VP8,audio:Opus" || info.Origin != "whip" {
		t.Fatalf("the published stream has %s from %q, want video:VP8,audio:Opus from whip; browser: %s", got, info.Origin, publisher.Output())
	}
	for _, o := range []struct{ name, url string }{
		{"http-fmp4", te.mediaURL("/live/vp8.live.mp4")},
		{"rtsp", te.rtspURL("live/vp8")},
	} {
		if got := probePackets(t, o.url, 150); got != "audio:opus,video:vp8" {
			t.Fatalf("%s of the VP8 stream carries %q, want audio:opus,video:vp8", o.name, got)
		}
	}
	// HLS with fMP4 segments: the master playlist names vp08 and Opus, and
	// ffprobe reads and decodes the segments.
	resp, err := http.Get(te.mediaURL("/live/vp8/hls.m3u8"))
	if err != nil {
		t.Fatal(err)
	}
	master, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(master), `CODECS="vp08.00.10.08,opus"`) {
		t.Fatalf("the HLS master playlist of the VP8 stream: %d %s", resp.StatusCode, master)
	}
	if got := probePackets(t, te.mediaURL("/live/vp8/hls.m3u8"), 150); got != "audio:opus,video:vp8" {
		t.Fatalf("HLS of the VP8 stream carries %q, want audio:opus,video:vp8", got)
	}
	if n := decodeURLFrames(t, te.mediaURL("/live/vp8/hls.m3u8"), 150); n < 25 {
		t.Fatalf("%d video frames decoded from HLS, want 25 or more", n)
	}
	resp, err = http.Get(te.mediaURL("/live/vp8.live.flv"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotAcceptable || !strings.Contains(string(body), "no H.264") {
		t.Fatalf("HTTP-FLV of a VP8 + Opus stream answered %d %q, want a refusal that says why", resp.StatusCode, body)
	}

	view := startBrowserHarness(t)
	viewer := peers.StartChromium(t, "http://"+view.addr+"/?whep="+url.QueryEscape(te.mediaURL("/live/vp8/whep")))
	first := view.waitReport(t, "the first decoded frame", 60*time.Second, func(r browserReport) bool { return r.FramesDec > 0 })
	got := view.waitReport(t, "3 s of VP8 played", 60*time.Second, func(r browserReport) bool {
		return r.CurrentTime >= first.CurrentTime+3 && r.FramesDec >= 50
	})
	if got.VideoCodec != "video/VP8" || got.Width == 0 || got.AudioCodec != "audio/opus" || got.Notes != "" {
		t.Fatalf("the WHEP viewer reports %+v; want video/VP8 and Opus, no notes; browser: %s", got, viewer.Output())
	}
	view.requestStop()
	view.waitReport(t, "the viewer's DELETE", 30*time.Second, func(r browserReport) bool { return r.Deleted != 0 })

	testkit.Eventually(t, 60*time.Second, "two recorded files", func() bool {
		var l engineapi.RecordingList
		te.control(t, "GET", engineapi.PathRecordings, nil, &l)
		return len(l.Recordings) == 1 && l.Recordings[0].Files >= 2
	})
	te.control(t, "POST", engineapi.PathRecordingStop, engineapi.StopRecordingRequest{App: "live", Stream: "vp8"}, nil)
	files := recordedFiles(t, filepath.Join(te.cfg.DataDir, "record"))
	if len(files) < 2 {
		t.Fatalf("%d recorded files, want 2 or more", len(files))
	}
	decoded := 0
	for _, f := range files {
		decoded += decodeFrames(t, f)
		p := mediaprobe.ProbeFile(t, f)
		var codecs []string
		for _, st := range p.Streams {
			codecs = append(codecs, st.CodecName)
		}
		v := p.Kind("video")
		if strings.Join(codecs, ",") != "vp8,opus" || len(v) == 0 || !strings.Contains(v[0].Flags, "K") {
			t.Fatalf("%s: streams %v, %d video packets; want vp8,opus starting at a keyframe", f, codecs, len(v))
		}
	}
	if decoded < 100 {
		t.Fatalf("%d video frames decoded from the recording, want 100 or more", decoded)
	}
	pub.requestStop()
	pub.waitReport(t, "the publisher's DELETE", 30*time.Second, func(r browserReport) bool { return r.Deleted != 0 })
	t.Logf("WHEP viewer of the VP8 stream: %+v; %d recorded files, %d video frames decoded", got, len(files), decoded)
}

// decodeFrames decodes every frame of a file with ffprobe, fails on any
// decoder message and answers the number of video frames. ffmpeg's null output (mediaprobe.Decode) is not used:
// it rounds a browser's variable frame times onto a fixed-rate time base
// and complains about its own rounding.
func decodeFrames(t *testing.T, path string) int {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command("ffprobe", "-v", "error", "-show_entries", "frame=media_type", "-of", "csv", path)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("decoding %s: %v: %s", path, err, stderr.String())
	}
	n := bytes.Count(out, []byte("frame,video"))
	if n == 0 {
		t.Fatalf("%s: no video frame decoded", path)
	}
	return n
}

// decodeURLFrames decodes the first n packets of a live URL with ffprobe,
// fails on any decoder message and answers the number of video frames.
func decodeURLFrames(t *testing.T, url string, n int) int {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command("ffprobe", "-v", "error", "-rw_timeout", "10000000", "-read_intervals", "%+#"+strconv.Itoa(n),
		"-show_entries", "frame=media_type", "-of", "csv", url)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("decoding %s: %v: %s", url, err, stderr.String())
	}
	return bytes.Count(out, []byte("frame,video"))
}
