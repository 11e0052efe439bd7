package rtsp

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
)

// pullInto feeds a relay stream from a Puller, as the engine's pull proxy
// will feed the hub.
func pullInto(t *testing.T, r *relay, path media.Path, url string, transport TransportMode) {
	t.Helper()
	var w FrameWriter
	p, err := NewPuller(PullerConfig{URL: url, Client: ClientConfig{Transport: transport},
		OnTracks: func(ts []*media.Track) {
			if w != nil {
				w.Close()
			}
			var err error
			if w, err = r.Publish(context.Background(), &PublishRequest{Path: path, Tracks: ts}); err != nil {
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
	g := startGStreamer(t)
	r := newRelay()
	srv := startServer(t, ServerConfig{}, r)
	path := media.Path{Vhost: media.DefaultVhost, App: "proxy", Stream: "cam"}
	pullInto(t, r, path, g.url("", "h264b"), TransportUDP)
	waitFor(t, 10*time.Second, "the pulled stream", func() bool { s := r.stream(path); return s != nil && s.keys.Load() > 0 })
	out := filepath.Join(t.TempDir(), "chain.mp4")
	runPeer(t, 40*time.Second, "ffmpeg", readArgs("tcp", rtspURL(srv.Addr(), "proxy/cam"), out, 10)...)
	checkRecording(t, out, "h264", "aac", 320, 240, 10, 25)
}
