package devstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/controlplane/server"
)

// The demo: the local engine loops the clip shipped in the binary at
// DemoSourcePath, as an IP camera would offer a stream; the demo channel
// pulls it over RTSP with a managed RTSP credential, exactly like a real
// camera channel, so a newcomer can lease and play live/demo.
const (
	DemoSourcePath = "demo/source"
	demoRTSPUser   = "demo-camera"
	demoApp        = "live"
	demoStream     = "demo"
)

// demoActor creates the demo's records.
var demoActor = audit.Actor{Type: "system", ID: "svc-dev"}

// DemoChannel creates, the first time, the RTSP credential and the
// auto-pull channel of the demo camera once the local media server is
// online, and prints how to play it.
func DemoChannel(ctx context.Context, s *server.Server, rtspAddr string, stdout io.Writer) error {
	if ch, err := s.Channels.ByStream(ctx, channels.DefaultVhost, demoApp, demoStream); err == nil {
		printDemo(stdout, ch)
		return nil
	} else if !errors.Is(err, channels.ErrNotFound) {
		return err
	}
	// The media server's id is known once the agent has enrolled and
	// reported.
	var mediaServerID string
	for mediaServerID == "" {
		if rec, err := s.MediaNodes().Get(ctx, NodeID); err == nil && rec.Status == nodes.StatusOnline && rec.MediaServerID != "" {
			mediaServerID = rec.MediaServerID
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	raw := make([]byte, 18)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	password := hex.EncodeToString(raw)
	if _, err := s.RTSPAuth.Save(ctx, demoActor, mediaServerID, demoRTSPUser, password, ""); err != nil {
		return fmt.Errorf("demo RTSP credential: %w", err)
	}
	src := (&url.URL{Scheme: "rtsp", User: url.UserPassword(demoRTSPUser, password), Host: rtspAddr, Path: "/" + DemoSourcePath}).String()
	name, desc, proto := "Demo camera", "the clip shipped with svc, looped by the local engine and pulled over RTSP", channels.ProtocolRTSP
	app, stream, auto := demoApp, demoStream, true
	ch, err := s.Channels.Create(ctx, demoActor, channels.Input{Name: &name, Description: &desc, Protocol: &proto, SourceURL: &src,
		App: &app, Stream: &stream, MediaServerID: &mediaServerID, AutoVideo: &auto})
	if err != nil {
		return fmt.Errorf("demo channel: %w", err)
	}
	printDemo(stdout, ch)
	return nil
}

func printDemo(stdout io.Writer, ch *channels.Channel) {
	fmt.Fprintf(stdout, "demo channel %s (%s/%s) pulls the local demo camera; lease it with POST /api/v2/third-party/channels/%s/playback-lease (see README)\n",
		ch.ChannelID, ch.App, ch.Stream, ch.ChannelID)
}
