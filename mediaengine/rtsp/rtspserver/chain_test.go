package rtspserver_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtspclient"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtspserver"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtsptest"
	"github.com/svcplatform/svc/test/testkit"
)

// pullInto feeds a relay stream from a Puller, as the engine's pull proxy
// will feed the hub.
func pullInto(t *testing.T, r *rtsptest.Relay, path media.Path, url string, transport rtspclient.TransportMode) {
	t.Helper()
	var w rtspserver.FrameWriter
	p, err := rtspclient.NewPuller(rtspclient.PullerConfig{URL: url, Client: rtspclient.Config{Transport: transport},
		OnTracks: func(ts []*media.Track) {
			if w != nil {
				w.Close()
			}
			var err error
			if w, err = r.Publish(context.Background(), &rtspserver.PublishRequest{Path: path, Tracks: ts}); err != nil {
				t.Error(err)
			}
		},
		OnFrame: func(f *media.Frame) { w.WriteFrame(f) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// The whole RTSP path of the engine: our Puller pulls from GStreamer
// (H.264 with B-frames, so DTS must be derived right), the relay stands in
// for the hub, our Server serves it, and ffmpeg reads 10 s of it.
func TestPullRelayPlayChain(t *testing.T) {
	t.Parallel() // real-time media: mostly waiting
	g := startGStreamer(t)
	r := rtsptest.NewRelay()
	srv := startServer(t, rtspserver.Config{}, r)
	path := media.Path{Vhost: media.DefaultVhost, App: "proxy", Stream: "cam"}
	pullInto(t, r, path, g.url("", "h264b"), rtspclient.TransportUDP)
	testkit.Eventually(t, 10*time.Second, "the pulled stream", func() bool { s := r.Stream(path); return s != nil && s.Keyframes.Load() > 0 })
	out := filepath.Join(t.TempDir(), "chain.mp4")
	runPeer(t, 40*time.Second, "ffmpeg", readArgs("tcp", rtspURL(srv.Addr(), "proxy/cam"), out, 10)...)
	checkRecording(t, out, "h264", "aac", 320, 240, 10, 25)
}
