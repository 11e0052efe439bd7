package mediaengine

import (
	"context"
	"errors"
	"fmt"
	"net"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtc"
	"github.com/svcplatform/svc/shared/engineapi"
)

// startWebRTC opens the WebRTC server and mounts its WHEP/WHIP routes on
// the media HTTP server. WebRTC is one output among several: when its port
// cannot be bound the engine serves the others and says why WebRTC is off.
func (e *Engine) startWebRTC(cfg engineapi.WebRTCConfig) {
	if cfg.UDPAddr == "" {
		e.log.Info("WebRTC is off (webrtc.udpAddr is empty)")
		return
	}
	srv, err := rtc.New(rtc.Config{UDPAddr: cfg.UDPAddr, TCPAddr: cfg.TCPAddr, PublicIPs: cfg.PublicIPs, MaxSessions: cfg.MaxSessions},
		rtcHost{e}, e.log.Named("webrtc"))
	if err != nil {
		e.log.Error("WebRTC is off: its port could not be opened", zap.Error(err))
		return
	}
	e.rtc = srv
	srv.Routes(e.media)
}

// WebRTCAddr is the WebRTC server's shared UDP port, nil when WebRTC is
// off.
func (e *Engine) WebRTCAddr() net.Addr {
	if e.rtc == nil {
		return nil
	}
	return e.rtc.UDPAddr()
}

// rtcHost admits WebRTC players and publishers through the engine's hooks,
// with the refusals the WebRTC server answers with.
type rtcHost struct{ e *Engine }

func (h rtcHost) Play(ctx context.Context, path media.Path, format hub.Format, protocol, remoteAddr string, params map[string]string) (*hub.Reader,
	func(int), func(), error) {
	rd, p, leave, err := h.e.play(ctx, path, format, protocol, remoteAddr, params)
	if err != nil {
		return nil, nil, nil, rtcRefusal(err)
	}
	return rd, p.AddBytes, leave, nil
}

func (h rtcHost) Publish(ctx context.Context, path media.Path, origin hub.Origin, params map[string]string, tracks []*media.Track) (*hub.Publisher, func(int),
	func(), error) {
	pub, err := h.e.Publish(ctx, path, origin, params, tracks)
	if err != nil {
		return nil, nil, nil, rtcRefusal(err)
	}
	key := hub.Key(path)
	received, leave := h.e.flows.publishing(engineapi.PublisherFlow{ID: params[rtc.SessionParam], Vhost: key.Vhost, App: key.App, Stream: key.Stream,
		Protocol: origin.Kind, RemoteAddr: origin.RemoteAddr})
	return pub, received, leave, nil
}

func rtcRefusal(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrPlayDenied), errors.Is(err, errOnPlay):
		return fmt.Errorf("%w: %w", rtc.ErrPlayDenied, err)
	case errors.Is(err, ErrPublishDenied), errors.Is(err, errOnPublish):
		return fmt.Errorf("%w: %w", rtc.ErrPublishDenied, err)
	case errors.Is(err, hub.ErrStreamNotFound):
		return fmt.Errorf("%w: %w", rtc.ErrStreamNotFound, err)
	case errors.Is(err, hub.ErrAlreadyPublishing):
		return fmt.Errorf("%w: %w", rtc.ErrAlreadyPublishing, err)
	}
	return err
}
