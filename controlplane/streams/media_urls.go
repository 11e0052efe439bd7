package streams

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/svcplatform/svc/controlplane/nodes"
)

// MediaURLs answers the public base URLs of a media server's HTTP media
// port and RTSP port for playback URLs.
type MediaURLs struct {
	Nodes *nodes.Service
}

// BaseURL implements playback.MediaURLs: the engine's HTTP address as the
// agent reported it.
func (m MediaURLs) BaseURL(ctx context.Context, mediaServerID string) (string, error) {
	return m.base(ctx, mediaServerID, "http", func(e nodes.Engine) string { return e.HTTPAddr })
}

// RTSPBaseURL implements playback.MediaURLs: the engine's RTSP address as
// the agent reported it.
func (m MediaURLs) RTSPBaseURL(ctx context.Context, mediaServerID string) (string, error) {
	return m.base(ctx, mediaServerID, "rtsp", func(e nodes.Engine) string { return e.RTSPAddr })
}

// base makes scheme://host:port of one of the engine's addresses; an
// unspecified host (0.0.0.0) is replaced by the host's name, which players
// on the network can resolve.
func (m MediaURLs) base(ctx context.Context, mediaServerID, scheme string, addr func(nodes.Engine) string) (string, error) {
	rec, err := m.Nodes.Resolve(ctx, "", mediaServerID)
	if err != nil {
		return "", err
	}
	host, port, err := net.SplitHostPort(addr(rec.Engine))
	if err != nil {
		return "", fmt.Errorf("media server %s has not reported its %s address yet", mediaServerID, scheme)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = rec.Hostname
		if host == "" {
			host = "127.0.0.1"
		}
	}
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(strings.Trim(host, "[]"), port)}
	return u.String(), nil
}
