package rtspclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/internal/peers"
)

// gstServer is the GStreamer RTSP server of test/peers, started by a test
// (mediaengine/internal/peers).
type gstServer struct{ *peers.GStreamer }

// startGStreamer starts the peer on a free port; extra are its flags
// (--user, --password, --auth).
func startGStreamer(t *testing.T, extra ...string) *gstServer {
	t.Helper()
	return &gstServer{peers.StartGStreamer(t, extra...)}
}

func (g *gstServer) start()                            { g.Start() }
func (g *gstServer) stop()                             { g.Stop() }
func (g *gstServer) url(userinfo, mount string) string { return g.URL(userinfo, mount) }

// runFor runs fn with a context that ends after d.
func runFor(d time.Duration, fn func(ctx context.Context)) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	fn(ctx)
}
