package rtspclient_test

import (
	"context"
	"log"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtspclient"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtspserver"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtsptest"
)

// Pulling a camera into a stream: OnTracks starts (or restarts, after a
// reconnect) the stream with the session's tracks, OnFrame feeds it.
func ExamplePuller() {
	hub := rtsptest.NewRelay() // the engine's stream hub in production
	path := media.Path{Vhost: media.DefaultVhost, App: "proxy", Stream: "gate"}
	var w rtspserver.FrameWriter
	p, err := rtspclient.NewPuller(rtspclient.PullerConfig{
		URL:    "rtsp://viewer:secret@192.0.2.10/Streaming/Channels/101",
		Client: rtspclient.Config{Transport: rtspclient.TransportAuto},
		OnTracks: func(tracks []*media.Track) {
			if w != nil {
				w.Close()
			}
			w, _ = hub.Publish(context.Background(), &rtspserver.PublishRequest{Path: path, Tracks: tracks})
		},
		OnFrame: func(f *media.Frame) { w.WriteFrame(f) },
		OnState: func(s rtspclient.PullerState, err error) { log.Printf("pull %s: %s %v", path, s, err) },
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p.Run(ctx) // until ctx ends, reconnecting as needed
}
