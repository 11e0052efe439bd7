package rtc

import (
	"net/http"
	"strings"
	"testing"

	"github.com/pion/webrtc/v4"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
)

// publisherOffer is the offer of a pion peer that knows only the codecs
// given and sends a track of each.
func publisherOffer(t *testing.T, codecs ...webrtc.RTPCodecCapability) string {
	t.Helper()
	me := &webrtc.MediaEngine{}
	for i, c := range codecs {
		kind := webrtc.RTPCodecTypeVideo
		if strings.HasPrefix(c.MimeType, "audio/") {
			kind = webrtc.RTPCodecTypeAudio
		}
		if err := me.RegisterCodec(webrtc.RTPCodecParameters{RTPCodecCapability: c, PayloadType: webrtc.PayloadType(96 + i)}, kind); err != nil {
			t.Fatal(err)
		}
	}
	return sendOffer(t, me, codecs...)
}

// TestWHIPOffers: a publisher of H.264 and Opus is admitted with those
// tracks; offers the hub cannot carry, receiving offers, publishing over a
// live stream and a publisher the hook refuses get their codes.
func TestWHIPOffers(t *testing.T) {
	ts := startServer(t)
	h264 := webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeH264, ClockRate: 90000,
		SDPFmtpLine: "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f"}
	opus := webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2}
	vp9 := webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP9, ClockRate: 90000}
	var published []*media.Track
	ts.publish = func(path media.Path, tracks []*media.Track) (*hub.Publisher, error) {
		switch path.Stream {
		case "denied":
			return nil, ErrPublishDenied
		case "cam":
			return nil, ErrAlreadyPublishing
		}
		published = tracks
		return ts.hub.Publish(path, hub.Origin{Kind: "whip"}, tracks)
	}
	_, viewer := clientOffer(t, defaultCodecs, webrtc.RTPCodecTypeVideo)

	resp, body := ts.post(t, "/live/new/whip", "application/sdp", publisherOffer(t, h264, opus))
	if resp.StatusCode != http.StatusCreated || !strings.HasPrefix(resp.Header.Get("Location"), "/live/new/whip/") {
		t.Fatalf("H.264 + Opus publisher: %d %s", resp.StatusCode, body)
	}
	if len(published) != 2 || published[0].Codec != media.CodecH264 || published[1].Codec != media.CodecOpus || !strings.Contains(body, "H264/90000") {
		t.Fatalf("published tracks %v; answer %s", published, body)
	}
	tests := []struct {
		name, path, body string
		status           int
		code             string
	}{
		{"VP9 only", "/live/vp9/whip", publisherOffer(t, vp9), 400, "no_common_codec"},
		{"receives instead of sending", "/live/x/whip", viewer, 400, "invalid_sdp"},
		{"stream already published", "/live/cam/whip", publisherOffer(t, h264), 409, "already_publishing"},
		{"refused by on_publish", "/live/denied/whip", publisherOffer(t, h264), 403, "publish_denied"},
		{"no ICE credentials", "/live/y/whip", stripLines(publisherOffer(t, h264), "a=ice-ufrag", "a=ice-pwd"), 400, "invalid_sdp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := ts.post(t, tt.path, "application/sdp", tt.body)
			if resp.StatusCode != tt.status || !strings.Contains(body, `"code":"`+tt.code+`"`) {
				t.Fatalf("got %d %s, want %d %s", resp.StatusCode, body, tt.status, tt.code)
			}
		})
	}
	if n := ts.Sessions(); n != 1 {
		t.Fatalf("%d sessions, want the one admitted publisher", n)
	}
}

// TestWHIPCodecChoice: an offer of VP8 before H.264 (as browsers offer),
// each with RTX, is answered with H.264 first and its RTX format, and the
// stream carries H.264; an offer of VP8 alone publishes VP8.
func TestWHIPCodecChoice(t *testing.T) {
	ts := startServer(t)
	var published []*media.Track
	ts.publish = func(path media.Path, tracks []*media.Track) (*hub.Publisher, error) {
		published = tracks
		return ts.hub.Publish(path, hub.Origin{Kind: "whip"}, tracks)
	}
	browserLike := publisherOfferWith(t, []webrtc.RTPCodecParameters{
		{PayloadType: 96, RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: 90000}},
		{PayloadType: 97, RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeRTX, ClockRate: 90000, SDPFmtpLine: "apt=96"}},
		{PayloadType: 109, RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeH264, ClockRate: 90000,
			SDPFmtpLine: "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f"}},
		{PayloadType: 110, RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeRTX, ClockRate: 90000, SDPFmtpLine: "apt=109"}},
	})
	resp, body := ts.post(t, "/live/both/whip", "application/sdp", browserLike)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("VP8 + H.264 publisher: %d %s", resp.StatusCode, body)
	}
	video := mediaSection(body, "video")
	if len(published) != 1 || published[0].Codec != media.CodecH264 || !strings.HasPrefix(video, "m=video 9 UDP/TLS/RTP/SAVPF 109 ") ||
		!strings.Contains(video, "a=fmtp:110 apt=109") {
		t.Fatalf("published %v; answer's video section:\n%s", published, video)
	}
	resp, body = ts.post(t, "/live/vp8/whip", "application/sdp", publisherOffer(t, webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8,
		ClockRate: 90000}))
	if resp.StatusCode != http.StatusCreated || len(published) != 1 || published[0].Codec != media.CodecVP8 {
		t.Fatalf("VP8 publisher: %d %s, published %v", resp.StatusCode, body, published)
	}
}

// publisherOfferWith is the offer of a pion peer that sends one video
// track with the video formats given, in their order.
func publisherOfferWith(t *testing.T, codecs []webrtc.RTPCodecParameters) string {
	t.Helper()
	me := &webrtc.MediaEngine{}
	for _, c := range codecs {
		if err := me.RegisterCodec(c, webrtc.RTPCodecTypeVideo); err != nil {
			t.Fatal(err)
		}
	}
	return sendOffer(t, me, codecs[0].RTPCodecCapability)
}

// sendOffer is the gathered offer of a pion peer with the media engine me
// that sends one track of each of tracks.
func sendOffer(t *testing.T, me *webrtc.MediaEngine, tracks ...webrtc.RTPCodecCapability) string {
	t.Helper()
	pc, err := webrtc.NewAPI(webrtc.WithMediaEngine(me)).NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	for i, c := range tracks {
		tr, err := webrtc.NewTrackLocalStaticRTP(c, "t"+string(rune('0'+i)), "s")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pc.AddTransceiverFromTrack(tr, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionSendonly}); err != nil {
			t.Fatal(err)
		}
	}
	return gatheredOffer(t, pc)
}

// mediaSection is the first media section of kind in an SDP, lines
// joined with \n.
func mediaSection(sdpText, kind string) string {
	var out []string
	in := false
	for _, line := range strings.Split(sdpText, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.HasPrefix(line, "m=") {
			if in {
				break
			}
			in = strings.HasPrefix(line, "m="+kind+" ")
		}
		if in {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
