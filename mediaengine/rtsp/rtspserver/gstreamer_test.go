package rtspserver_test

import (
	"testing"

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

func (g *gstServer) url(userinfo, mount string) string { return g.URL(userinfo, mount) }
