package rtsp_test

import (
	"context"
	"log"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtsp"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtsptest"
)

// Pulling a camera into a stream: OnTracks starts (or restarts, after a
// reconnect) the stream with the session's tracks, OnFrame feeds it.
func ExamplePuller() {
	hub := rtsptest.NewRelay() // the engine's stream hub in production
	path := media.Path{Vhost: media.DefaultVhost, App: "proxy", Stream: "gate"}
	var w rtsp.FrameWriter
	p, err := rtsp.NewPuller(rtsp.PullerConfig{
		URL:    "rtsp://viewer:secret@192.0.2.10/Streaming/Channels/101",
		Client: rtsp.ClientConfig{Transport: rtsp.TransportAuto},
		OnTracks: func(tracks []*media.Track) {
			if w != nil {
				w.Close()
			}
			w, _ = hub.Publish(context.Background(), &rtsp.PublishRequest{Path: path, Tracks: tracks})
		},
		OnFrame: func(f *media.Frame) { w.WriteFrame(f) },
		OnState: func(s rtsp.PullerState, err error) { log.Printf("pull %s: %s %v", path, s, err) },
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p.Run(ctx) // until ctx ends, reconnecting as needed
}

// Serving: publishers push with ANNOUNCE/RECORD, players pull with
// DESCRIBE/SETUP/PLAY; the Handler decides and connects them to streams.
func ExampleServer() {
	users := map[string]string{"cam-17": "from the control plane"}
	srv, err := rtsp.NewServer(rtsp.ServerConfig{
		Addr:        ":8554",
		UDPRTPAddr:  ":8000",
		Credentials: func(u string) (string, bool) { p, ok := users[u]; return p, ok },
	}, rtsptest.NewRelay())
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	for _, s := range srv.Sessions() {
		log.Printf("%s %s publishing=%v", s.ID, s.Path, s.Publishing)
	}
}
