package playback

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/svcplatform/svc/controlplane/store"
)

// Source is one way to play a grant, as contract B tables it.
type Source struct {
	Protocol      Protocol `json:"protocol"`
	URL           string   `json:"url"`
	ContentType   string   `json:"contentType"`
	BrowserNative bool     `json:"browserNative"`
	Hint          string   `json:"hint"`
}

// sourceShape is what each protocol's URL and advice look like; the paths
// are the engine's media routes.
var sourceShape = map[Protocol]struct {
	suffix, contentType string
	native              bool
	hint                string
}{
	ProtoFLV: {".live.flv", "video/x-flv", false,
		"One long HTTP connection; browsers play it with mpegts.js or flv.js over MSE, ffmpeg and VLC directly. Reconnect with the same URL while the lease is renewed."},
	ProtoFMP4: {".live.mp4", "video/mp4", false,
		"A long-lived fragmented MP4 stream, not a file: feed it to MSE (for example mpegts.js in fMP4 mode) or play it with ffmpeg/VLC; lowest latency for H.265."},
	ProtoHLS: {"/hls.m3u8", "application/vnd.apple.mpegurl", true,
		"Safari and iOS play it natively, other browsers with hls.js. Each player gets its own svc_viewer session from this URL; a few seconds more latency than HTTP-FLV."},
}

// sources builds the URLs of a grant on a media server.
func (s *Service) sources(ctx context.Context, mediaServerID, vhost, app, stream string, protos []Protocol, ticket func(Protocol) string) ([]Source, error) {
	base, err := s.Media.BaseURL(ctx, mediaServerID)
	if err != nil {
		return nil, err
	}
	base = strings.TrimRight(base, "/")
	out := make([]Source, 0, len(protos))
	for _, p := range protos {
		sh := sourceShape[p]
		q := url.Values{TicketParam: {ticket(p)}}
		if vhost != "" && vhost != DefaultVhost {
			q.Set("vhost", vhost)
		}
		out = append(out, Source{Protocol: p, URL: base + "/" + url.PathEscape(app) + "/" + url.PathEscape(stream) + sh.suffix + "?" + q.Encode(),
			ContentType: sh.contentType, BrowserNative: sh.native, Hint: sh.hint})
	}
	return out, nil
}

// DefaultVhost is the vhost URLs do not need to name.
const DefaultVhost = "__defaultVhost__"

func decodeLease(kv *store.KeyValue) (*Lease, error) {
	if kv == nil {
		return nil, ErrNotFound
	}
	var l Lease
	return &l, json.Unmarshal(kv.Value, &l)
}
