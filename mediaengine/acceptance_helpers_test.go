package mediaengine

import (
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/internal/mediaprobe"
	"github.com/svcplatform/svc/mediaengine/internal/peers"
	"github.com/svcplatform/svc/shared/engineapi"
	"github.com/svcplatform/svc/test/testkit"
)

// Helpers of the engine's acceptance tests: real peers publish into or
// serve the whole engine, and every output is read by ffprobe.

// probeSeconds is how much of each output ffprobe reads: the issue asks
// for at least 10 s.
const probeSeconds = 11

// output is one way a player reads a stream from the engine.
type output struct {
	name string
	url  func(te *testEngine, app, stream string) string
	args []string // extra ffprobe arguments
	// leadingWithoutDTS: see mediaprobe.Want.
	leadingWithoutDTS int
}

var (
	outFLV  = output{name: "http-flv", url: func(te *testEngine, a, s string) string { return te.mediaURL("/" + a + "/" + s + ".live.flv") }}
	outFMP4 = output{name: "http-fmp4", url: func(te *testEngine, a, s string) string { return te.mediaURL("/" + a + "/" + s + ".live.mp4") }}
	outHLS  = output{name: "hls", url: func(te *testEngine, a, s string) string {
		return te.mediaURL("/" + a + "/" + s + "/hls.m3u8?svc_viewer=probe")
	}}
	outRTSP = output{name: "rtsp", url: func(te *testEngine, a, s string) string { return te.rtspURL(a + "/" + s) },
		args: []string{"-rtsp_transport", "tcp"}, leadingWithoutDTS: 3}
	// allOutputs are what a demanding user plays an H.264 stream with.
	allOutputs = []output{outFLV, outFMP4, outHLS, outRTSP}
)

// rtspURL is the engine's RTSP URL of a path ("app/stream").
func (te *testEngine) rtspURL(path string) string {
	return "rtsp://" + te.RTSPAddr().String() + "/" + path
}

// probeOutputs reads every output of app/stream with ffprobe for
// probeSeconds, all at once, and checks each against want. The reads are
// real time, so they run side by side in goroutines: t.Parallel would
// queue them behind -parallel (GOMAXPROCS, 2 here) and the stream would
// be long gone by the last one.
func probeOutputs(t *testing.T, te *testEngine, app, stream string, want mediaprobe.Want, outs ...output) {
	t.Helper()
	var wg sync.WaitGroup
	for _, o := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(o.name, func(t *testing.T) {
				w := want
				w.LeadingWithoutDTS = o.leadingWithoutDTS
				mediaprobe.Probe(t, o.url(te, app, stream), probeSeconds, o.args...).Check(t, w)
			})
		}()
	}
	wg.Wait()
}

// lavfiWant is what ffprobe must find in a stream of ffmpegPublish or of
// the GStreamer peer's /h264 mount: 320x240 at 25 fps, 44.1 kHz mono AAC.
var lavfiWant = mediaprobe.Want{VideoCodec: "h264", Width: 320, Height: 240, FPS: 25, AudioCodec: "aac",
	SampleRate: 44100, Channels: 1, AudioFrameSamples: 1024, MinSeconds: 10}

// ffmpegPublish has ffmpeg publish a lavfi test pattern (testsrc2 and a
// sine) in real time to an RTSP URL for seconds, encoded as codec
// ("h264" with B-frames, or "hevc"), over transport ("tcp" or "udp").
func ffmpegPublish(t *testing.T, codec, transport, url string, seconds int) *peers.Process {
	t.Helper()
	args := []string{"-hide_banner", "-loglevel", "error", "-re",
		"-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25",
		"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100",
		"-t", strconv.Itoa(seconds)}
	switch codec {
	case "h264":
		args = append(args, "-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", "25", "-pix_fmt", "yuv420p")
	case "hevc":
		args = append(args, "-c:v", "libx265", "-preset", "ultrafast", "-x265-params", "log-level=error:keyint=25",
			"-pix_fmt", "yuv420p")
	default:
		t.Fatalf("ffmpegPublish: codec %q", codec)
	}
	args = append(args, "-c:a", "aac", "-b:a", "64k", "-f", "rtsp", "-rtsp_transport", transport, url)
	return peers.Start(t, "ffmpeg", args...)
}

// waitStreamReady waits until the engine lists app/stream with every track
// ready, and returns it.
func waitStreamReady(t *testing.T, te *testEngine, app, stream string, timeout time.Duration) engineapi.StreamInfo {
	t.Helper()
	var got engineapi.StreamInfo
	testkit.Eventually(t, timeout, app+"/"+stream+" to be live", func() bool {
		var l engineapi.StreamList
		te.control(t, "GET", engineapi.PathStreams+"?app="+app+"&stream="+stream, nil, &l)
		if len(l.Streams) != 1 || len(l.Streams[0].Tracks) == 0 {
			return false
		}
		for _, tr := range l.Streams[0].Tracks {
			if !tr.Ready || tr.Frames == 0 {
				return false
			}
		}
		got = l.Streams[0]
		return true
	})
	return got
}

// trackCodecs lists a stream's track codecs, for messages and checks.
func trackCodecs(s engineapi.StreamInfo) string {
	var c []string
	for _, tr := range s.Tracks {
		c = append(c, tr.Kind+":"+tr.Codec)
	}
	return strings.Join(c, ",")
}

// noDemo starts an engine without the demo clip.
func noDemo(c *engineapi.Config) { c.DemoFile, c.DemoPath = "", "" }

// stalledFLVPlayer connects an HTTP-FLV player that never reads, with a
// tiny receive buffer so its socket fills at once, and waits until the
// control API lists it (by its svc_ticket) with more than 50 dropped
// frames; the test's cleanup closes it.
func stalledFLVPlayer(t *testing.T, te *testEngine, pathAndQuery, ticket string) engineapi.PlayerInfo {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", te.MediaAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.Write([]byte("GET " + pathAndQuery + " HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	var slow engineapi.PlayerInfo
	testkit.Eventually(t, 30*time.Second, "the stalled player to drop frames", func() bool {
		var l engineapi.PlayerList
		te.control(t, "GET", engineapi.PathPlayers+"?ticket="+ticket, nil, &l)
		if len(l.Players) == 1 {
			slow = l.Players[0]
		}
		return slow.Dropped > 50
	})
	return slow
}
