package mediaengine

import (
	"context"
	"errors"
	"sync"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/proxy"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtspclient"
)

// rtspPuller pulls rtsp:// sources for the proxy registry: one session per
// Pull (the registry owns reconnecting and its backoff), UDP first in
// automatic mode with an immediate fall-back to TCP, RTP ports from the
// engine's range.
type rtspPuller struct {
	udpPorts [2]int
	log      *zap.Logger
}

// errWriterClosed ends a session whose stream the hub closed.
var errWriterClosed = errors.New("the stream was closed")

func (r rtspPuller) Pull(ctx context.Context, src proxy.Source, publish func([]*media.Track) (proxy.FrameWriter, error)) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		mu sync.Mutex
		w  proxy.FrameWriter
	)
	cfg := rtspclient.PullerConfig{URL: src.URL, Log: r.log,
		Client: rtspclient.Config{Transport: rtspclient.TransportMode(src.Transport), UDPPorts: r.udpPorts, AllowBasicAuth: src.AllowBasicAuth, Log: r.log},
		OnTracks: func(tracks []*media.Track) {
			pw, err := publish(tracks)
			mu.Lock()
			w = pw
			mu.Unlock()
			if err != nil {
				cancel(err)
			}
		},
		OnFrame: func(f *media.Frame) {
			mu.Lock()
			pw := w
			mu.Unlock()
			if pw == nil {
				return
			}
			if err := pw.WriteFrame(f); err != nil {
				cancel(errors.Join(errWriterClosed, err))
			}
		},
	}
	if cfg.Client.Transport == "" {
		cfg.Client.Transport = rtspclient.TransportAuto
	}
	p, err := rtspclient.NewPuller(cfg)
	if err != nil {
		return err
	}
	_, err = p.Once(ctx)
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}
