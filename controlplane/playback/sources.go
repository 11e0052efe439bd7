package playback

import (
	"context"
	"net/url"
	"slices"
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
// are the engine's media routes (RTSP plays at the bare stream path).
var sourceShape = map[Protocol]struct {
	suffix, contentType string
	native              bool
	hint                string
}{
	ProtoFLV: {".live.flv", "video/x-flv", false,
		"One long HTTP connection: browsers play it with mpegts.js or flv.js over MSE; ffmpeg, ffplay and VLC play it directly. " +
			"FLV carries H.264 or H.265 with AAC or G.711: a VP8 stream (a WebRTC publisher's) is refused (406 no_common_codec); play it over " +
			"HTTP-fMP4, HLS, RTSP or WebRTC."},
	ProtoFMP4: {".live.mp4", "video/mp4", true,
		"A long-lived fragmented MP4 stream, not a file: Chromium-based browsers play it in a <video> element as it is (H.264 and AAC), other " +
			"browsers through MSE; ffmpeg, ffplay and VLC play it directly."},
	ProtoHLS: {"/hls.m3u8", "application/vnd.apple.mpegurl", true,
		"Safari and iOS play it natively, other browsers with hls.js; each player gets its own svc_viewer session from this URL; a few seconds more latency than HTTP-FLV."},
	ProtoRTSP: {"", "application/sdp", false,
		"RTSP for VLC, ffplay and NVR software, RTP over TCP (interleaved) or UDP; the ticket in the URL stands for credentials and is checked at DESCRIBE. Browsers do not play RTSP."},
	ProtoWebRTC: {"/whep", "application/sdp", true,
		"WHEP, sub-second latency in a plain <video>: POST the browser's SDP offer (Content-Type application/sdp) to this URL and apply the answer; " +
			"the answer's Location is the session, DELETE it when done. Video is H.264 (or a WebRTC publisher's VP8) as sent; Opus and G.711 audio pass through, " +
			"AAC audio is left out (no transcoding; the answer's X-Svc-Note says so). Media uses the media server's WebRTC UDP port (ICE-TCP as a fallback)."},
}

// grantHint is what a source's URL promises, by the grant behind it.
var grantHint = map[string]string{
	kindLease:   " The URL stays the same while the lease is renewed: reconnect with it.",
	kindOneTime: " The URL admits one player, once, until expiresAt: a player that reconnects needs a new URL (or a playback lease).",
}

// sources builds the URLs of a grant of kind (kindLease, kindOneTime) on a
// media server.
func (s *Service) sources(ctx context.Context, kind, mediaServerID, vhost, app, stream string, protos []Protocol, ticket func(Protocol) string) ([]Source, error) {
	base, err := s.Media.BaseURL(ctx, mediaServerID)
	if err != nil {
		return nil, err
	}
	base = strings.TrimRight(base, "/")
	var codecs []string
	if s.Codecs != nil {
		// The note is advice: a stream whose tracks cannot be read now still
		// gets its URLs, with the protocol's general hint only.
		codecs, _ = s.Codecs(ctx, mediaServerID, vhost, app, stream)
	}
	out := make([]Source, 0, len(protos))
	for _, p := range protos {
		sh := sourceShape[p]
		q := url.Values{TicketParam: {ticket(p)}}
		if vhost != "" && vhost != DefaultVhost {
			q.Set("vhost", vhost)
		}
		b := base
		if p == ProtoRTSP {
			if b, err = s.Media.RTSPBaseURL(ctx, mediaServerID); err != nil {
				return nil, err
			}
			b = strings.TrimRight(b, "/")
		}
		out = append(out, Source{Protocol: p, URL: b + "/" + url.PathEscape(app) + "/" + url.PathEscape(stream) + sh.suffix + "?" + q.Encode(),
			ContentType: sh.contentType, BrowserNative: sh.native, Hint: streamNote(p, codecs) + sh.hint + grantHint[kind]})
	}
	return out, nil
}

// streamNote says, ahead of a protocol's general hint, what this stream's
// own codecs (as its media server last reported them) mean for that
// protocol; "" when nothing is lost. The engine never transcodes, so a
// track a protocol cannot carry is left out, and a stream with none it can
// carry is refused.
func streamNote(p Protocol, codecs []string) string {
	has := func(c string) bool { return slices.Contains(codecs, c) }
	var notes []string
	switch p {
	case ProtoFLV:
		video, audio := has("H264") || has("H265"), has("AAC") || has("PCMA") || has("PCMU")
		switch {
		case !video && !audio && (has("VP8") || has("Opus")):
			notes = append(notes, "This stream ("+strings.Join(codecs, ", ")+") has no track FLV can carry: this URL answers 406 no_common_codec.")
		case has("VP8") && !video:
			notes = append(notes, "This stream's video is VP8, which FLV cannot carry: this URL plays its audio only.")
		case has("Opus") && !audio:
			notes = append(notes, "This stream's audio is Opus, which FLV cannot carry: this URL plays its video only.")
		}
	case ProtoHLS:
		if has("VP8") {
			notes = append(notes, "This stream's video is VP8: HLS plays it when the media server writes fMP4 segments (hls.format fmp4); "+
				"with MPEG-TS segments this URL answers 406 no_common_codec.")
		}
	case ProtoWebRTC:
		if has("H265") {
			notes = append(notes, "This stream's video is H.265: only a browser whose offer has H265 gets video.")
		}
		if has("AAC") {
			notes = append(notes, "This stream's audio is AAC, which WebRTC cannot carry: the session has no audio.")
		}
	}
	if len(notes) == 0 {
		return ""
	}
	return strings.Join(notes, " ") + " "
}

// DefaultVhost is the vhost URLs do not need to name.
const DefaultVhost = "__defaultVhost__"

func decodeLease(kv *store.KeyValue) (*Lease, error) {
	if kv == nil {
		return nil, ErrNotFound
	}
	l, err := store.Decode[Lease](kv)
	return &l, err
}
