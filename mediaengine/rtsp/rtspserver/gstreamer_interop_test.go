package rtspserver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtspserver"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtsptest"
	"github.com/svcplatform/svc/test/testkit"
)

// gstLaunch runs a gst-launch-1.0 pipeline for d, then interrupts it so
// that -e turns the interrupt into end-of-stream and muxers finish their
// files.
func gstLaunch(t *testing.T, d time.Duration, pipeline string) {
	t.Helper()
	requireTool(t, "gst-launch-1.0")
	cmd := peerCommand(context.Background(), "gst-launch-1.0", append([]string{"-e", "-q"}, strings.Fields(pipeline)...)...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("gst-launch-1.0 ended early: %v\n%s", err, out.String())
	case <-time.After(d):
	}
	cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("gst-launch-1.0 did not stop:\n%s", out.String())
	}
}

// GStreamer as the other implementation at both ends: it publishes into
// the server with rtspclientsink (its AAC goes as MP4A-LATM), and it plays
// from the server with rtspsrc over UDP and TCP.
func TestServerWithGStreamerClients(t *testing.T) {
	t.Parallel() // real-time media: mostly waiting
	r := rtsptest.NewRelay()
	srv := startServer(t, rtspserver.Config{}, r)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// GStreamer publishes.
	gstPub := rtspURL(srv.Addr(), "live/gst")
	pub := peerCommand(ctx, "gst-launch-1.0", strings.Fields(
		"-q videotestsrc is-live=true ! video/x-raw,width=320,height=240,framerate=25/1,format=I420 ! "+
			"x264enc tune=zerolatency speed-preset=ultrafast key-int-max=25 ! h264parse ! queue ! s.sink_0 "+
			"audiotestsrc is-live=true ! audioconvert ! avenc_aac ! aacparse ! queue ! s.sink_1 "+
			"rtspclientsink name=s protocols=tcp location="+gstPub)...)
	requireTool(t, "gst-launch-1.0")
	if err := pub.Start(); err != nil {
		t.Fatal(err)
	}
	defer pub.Wait()
	defer cancel()
	// ffmpeg publishes too, with AAC the engine carries. Without
	// B-frames: GStreamer's rtph264depay gives no DTS, and its mp4mux
	// then loses reordered frames (its own server's B-frame stream fares
	// no better).
	ffPub := rtspURL(srv.Addr(), "live/ff")
	startProcess(t, "ffmpeg", publishArgs("h264-no-b", "tcp", ffPub, 20)...)
	for _, stream := range []string{"gst", "ff"} {
		path := media.Path{Vhost: media.DefaultVhost, App: "live", Stream: stream}
		testkit.Eventually(t, 10*time.Second, "the "+stream+" stream", func() bool { s := r.Stream(path); return s != nil && s.Keyframes.Load() > 0 })
	}
	codecs := map[media.Codec]bool{}
	tracks := r.Stream(media.Path{Vhost: media.DefaultVhost, App: "live", Stream: "gst"}).Tracks
	for _, tr := range tracks {
		codecs[tr.Codec] = tr.Ready()
	}
	if len(tracks) != 2 || !codecs[media.CodecH264] || !codecs[media.CodecAAC] {
		t.Fatalf("GStreamer's publish has tracks %v", tracks)
	}

	dir := t.TempDir()
	for _, tt := range []struct {
		name, url, protocols, audio string
	}{
		{"GStreamer's publish over UDP", gstPub, "udp", "aac"},
		{"ffmpeg's publish over TCP", ffPub, "tcp", "aac"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, tt.protocols+".mp4")
			pipeline := "rtspsrc name=src protocols=" + tt.protocols + " location=" + tt.url +
				" src. ! queue ! rtph264depay ! h264parse ! mp4mux name=mux ! filesink location=" + out
			if tt.audio != "" {
				pipeline += " src. ! queue ! rtpmp4gdepay ! aacparse ! mux."
			}
			gstLaunch(t, 6*time.Second, pipeline)
			checkRecording(t, out, "h264", tt.audio, 320, 240, 4, 25)
		})
	}
}
