package rtspserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/internal/peers"
)

// Helpers for the tests with real peers (ffmpeg, ffprobe, GStreamer). A
// missing peer fails the test: install them with scripts/install-deps.sh.

func requireTool(t *testing.T, name string) string { return peers.Require(t, name) }

// startProcess runs a peer in the background for the test's lifetime and
// returns a function that stops it and returns its output.
func startProcess(t *testing.T, name string, args ...string) (stop func() string) {
	t.Helper()
	return peers.Start(t, name, args...).Stop
}

// probeStream is what ffprobe reports of one stream of a file.
type probeStream struct {
	Index     int    `json:"index"`
	CodecType string `json:"codec_type"`
	CodecName string `json:"codec_name"`
	Width     int    `json:"width"`
	Height    int    `json:"height"`
	Packets   int
	DTS       []float64
	PTS       []float64
}

// probe runs ffprobe on a file and returns its streams with every
// packet's timestamps.
func probe(t *testing.T, path string) map[string]*probeStream {
	t.Helper()
	requireTool(t, "ffprobe")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-of", "json", "-show_streams", "-show_packets",
		"-show_entries", "stream=index,codec_type,codec_name,width,height:packet=stream_index,pts_time,dts_time", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	var res struct {
		Streams []*probeStream `json:"streams"`
		Packets []struct {
			StreamIndex int    `json:"stream_index"`
			PTS         string `json:"pts_time"`
			DTS         string `json:"dts_time"`
		} `json:"packets"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	m := map[string]*probeStream{}
	for _, s := range res.Streams {
		m[s.CodecType] = s
	}
	for _, p := range res.Packets {
		for _, s := range res.Streams {
			if s.Index == p.StreamIndex {
				s.Packets++
				dts, _ := strconv.ParseFloat(p.DTS, 64)
				pts, _ := strconv.ParseFloat(p.PTS, 64)
				s.DTS = append(s.DTS, dts)
				s.PTS = append(s.PTS, pts)
			}
		}
	}
	return m
}

// checkRecording checks a file a player wrote: the codecs and size, about
// seconds*fps video frames (within 2%), monotonic timestamps, audio.
func checkRecording(t *testing.T, path, videoCodec, audioCodec string, width, height int, seconds, fps float64) {
	t.Helper()
	streams := probe(t, path)
	v, a := streams["video"], streams["audio"]
	if v == nil || v.CodecName != videoCodec || v.Width != width || v.Height != height {
		t.Fatalf("video stream %+v, want %s %dx%d", v, videoCodec, width, height)
	}
	// What was sent in the span the file covers: the reader's -t counts
	// from the earliest stream, and audio may start a little before the
	// first video frame. ffmpeg's RTSP demuxer gives the very first video
	// packet no timestamp and makes one up, so the span starts at the
	// second.
	if len(v.PTS) < 2 {
		t.Fatalf("%d video packets", len(v.PTS))
	}
	lo, hi := v.PTS[1], v.PTS[1]
	for _, p := range v.PTS[1:] {
		lo, hi = min(lo, p), max(hi, p)
	}
	if span := hi - lo; span < seconds-0.5 {
		t.Errorf("video spans %.2f s, want about %.0f s", span, seconds)
	}
	want := (hi-lo)*fps + 2
	if got := float64(v.Packets); got < want*0.98 || got > want*1.02 {
		t.Errorf("%d video frames over %.2f s, want %.0f ± 2%%", v.Packets, hi-lo, want)
	}
	checkMonotonic(t, "video", v.DTS)
	if audioCodec != "" {
		if a == nil || a.CodecName != audioCodec || a.Packets < int(seconds*10) {
			t.Fatalf("audio stream %+v, want %s", a, audioCodec)
		}
		checkMonotonic(t, "audio", a.DTS)
	}
	t.Logf("%s: %s %dx%d %d frames, audio %d packets", path, v.CodecName, v.Width, v.Height, v.Packets, packetsOf(a))
}

func packetsOf(s *probeStream) int {
	if s == nil {
		return 0
	}
	return s.Packets
}

func checkMonotonic(t *testing.T, what string, ts []float64) {
	t.Helper()
	for i := 1; i < len(ts); i++ {
		if ts[i] <= ts[i-1] {
			t.Errorf("%s timestamps not monotonic at packet %d: %v after %v", what, i, ts[i], ts[i-1])
			return
		}
	}
}

func rtspURL(addr net.Addr, path string) string {
	return fmt.Sprintf("rtsp://%s/%s", addr.String(), strings.TrimPrefix(path, "/"))
}

func itoa(n int) string { return strconv.Itoa(n) }

// runPeer runs a peer to completion within timeout and fails the test if
// it does not succeed.
func runPeer(t *testing.T, timeout time.Duration, name string, args ...string) string {
	t.Helper()
	requireTool(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := peerCommand(ctx, name, args...).CombinedOutput()
	if err != nil {
		t.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// runPeerExpectFailure runs a peer that should fail and returns its output.
func runPeerExpectFailure(t *testing.T, timeout time.Duration, name string, args ...string) string {
	t.Helper()
	requireTool(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := peerCommand(ctx, name, args...).CombinedOutput()
	if err == nil {
		t.Errorf("%s %s succeeded", name, strings.Join(args, " "))
	}
	return string(out)
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// peerCommand is exec.CommandContext for a peer that must not outlive
// the test binary, even when it crashes before its cleanups run.
func peerCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	return peers.Command(ctx, name, args...)
}
