package rtc

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pion/webrtc/v4"

	"github.com/svcplatform/svc/mediaengine/media"
)

// feedback is the RTCP feedback every video codec offers: NACK for
// retransmission from the sender's buffer, PLI and FIR for keyframe
// requests (relayed to the source), REMB and transport-cc for congestion
// estimates.
var feedback = []webrtc.RTCPFeedback{{Type: "goog-remb"}, {Type: "ccm", Parameter: "fir"}, {Type: "nack"},
	{Type: "nack", Parameter: "pli"}, {Type: "transport-cc"}}

// h264Profiles are the H.264 profiles the server answers with: browsers
// offer each as its own payload type and pick the first the answer keeps.
// The server passes the source's bitstream through whatever its profile;
// every browser decoder takes these.
var h264Profiles = []string{"42e01f", "42001f", "4d001f", "640032"}

// rtxOffset is added to a video codec's payload type to give its RTX
// (RFC 4588) payload type: 102-105 H.264 -> 112-115, 96 VP8 -> 106,
// 49 H.265 -> 59.
const rtxOffset = 10

// registerCodecs puts the codecs the server can carry into m, with fixed
// payload types so answers are stable. A publisher's answer keeps only
// what the hub carries (H.264, VP8; Opus and G.711), H.264 first (see
// preferH264). Each video codec has its RTX format (apt=), so the NACK
// responder resends lost packets on the RTX stream of a viewer that
// offered RTX, and a publisher's retransmissions are taken from its RTX
// stream; pion's NACK interceptors do the rest.
func registerCodecs(m *webrtc.MediaEngine, publish bool) error {
	var video []webrtc.RTPCodecParameters
	pt := webrtc.PayloadType(102)
	for _, profile := range h264Profiles {
		video = append(video, webrtc.RTPCodecParameters{PayloadType: pt, RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeH264,
			ClockRate: 90000, SDPFmtpLine: "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=" + profile,
			RTCPFeedback: feedback}})
		pt++
	}
	if !publish {
		video = append(video, webrtc.RTPCodecParameters{PayloadType: 49,
			RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeH265, ClockRate: 90000, RTCPFeedback: feedback}})
	}
	video = append(video, webrtc.RTPCodecParameters{PayloadType: 96,
		RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: 90000, RTCPFeedback: feedback}})
	// RTX formats go after every media format: pion keeps this order where
	// it answers with its own, and a section's first format must be one a
	// sender can use.
	for _, c := range video {
		video = append(video, webrtc.RTPCodecParameters{PayloadType: c.PayloadType + rtxOffset, RTPCodecCapability: webrtc.RTPCodecCapability{
			MimeType: webrtc.MimeTypeRTX, ClockRate: 90000, SDPFmtpLine: fmt.Sprintf("apt=%d", c.PayloadType)}})
	}
	for _, c := range video {
		if err := m.RegisterCodec(c, webrtc.RTPCodecTypeVideo); err != nil {
			return fmt.Errorf("rtc: register %s: %w", c.MimeType, err)
		}
	}
	audio := []webrtc.RTPCodecParameters{
		{PayloadType: 111, RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2,
			SDPFmtpLine: "minptime=10;useinbandfec=1"}},
		{PayloadType: 0, RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypePCMU, ClockRate: 8000, Channels: 1}},
		{PayloadType: 8, RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypePCMA, ClockRate: 8000, Channels: 1}},
	}
	for _, c := range audio {
		if err := m.RegisterCodec(c, webrtc.RTPCodecTypeAudio); err != nil {
			return fmt.Errorf("rtc: register %s: %w", c.MimeType, err)
		}
	}
	return nil
}

// preferH264 reorders a publisher's video sections so the answer lists
// H.264 before VP8 (RTX last) when the offer has both: a browser sends the
// answer's first format, pion answers in the offer's order, and browsers
// offer VP8 first. H.264 is what every output (FLV, HLS, RTSP) carries; a
// publisher that wants VP8 offers only VP8.
func preferH264(pc *webrtc.PeerConnection) {
	rank := func(c webrtc.RTPCodecParameters) int {
		switch {
		case strings.EqualFold(c.MimeType, webrtc.MimeTypeH264):
			return 0
		case strings.EqualFold(c.MimeType, webrtc.MimeTypeRTX):
			return 2
		}
		return 1
	}
	for _, tr := range pc.GetTransceivers() {
		if tr.Kind() != webrtc.RTPCodecTypeVideo || tr.Receiver() == nil {
			continue
		}
		codecs := tr.Receiver().GetParameters().Codecs
		if len(codecs) < 2 || rank(codecs[0]) == 0 {
			continue
		}
		sorted := slices.Clone(codecs)
		slices.SortStableFunc(sorted, func(a, b webrtc.RTPCodecParameters) int { return rank(a) - rank(b) })
		// A refusal leaves the offer's order: the publisher then sends what
		// it listed first, which the hub carries too.
		_ = tr.SetCodecPreferences(sorted)
	}
}

// sendCapability is how a hub track goes to a WHEP viewer whose offer is
// o, or a note saying why it cannot.
func sendCapability(t *media.Track, o *offer) (webrtc.RTPCodecCapability, string) {
	switch t.Codec {
	case media.CodecH264:
		if !o.offers("video", "H264") {
			return webrtc.RTPCodecCapability{}, "video: the offer has no H264, so the session has no video"
		}
		fmtp := "level-asymmetry-allowed=1;packetization-mode=1"
		if len(t.SPS) >= 4 {
			fmtp += fmt.Sprintf(";profile-level-id=%02x%02x%02x", t.SPS[1], t.SPS[2], t.SPS[3])
		}
		return webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeH264, ClockRate: 90000, SDPFmtpLine: fmtp, RTCPFeedback: feedback}, ""
	case media.CodecH265:
		if !o.offers("video", "H265") {
			return webrtc.RTPCodecCapability{}, "video: H265 is not in the offer (no transcoding), so the session has no video"
		}
		return webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeH265, ClockRate: 90000, RTCPFeedback: feedback}, ""
	case media.CodecVP8:
		if !o.offers("video", "VP8") {
			return webrtc.RTPCodecCapability{}, "video: VP8 is not in the offer (no transcoding), so the session has no video"
		}
		return webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: 90000, RTCPFeedback: feedback}, ""
	case media.CodecOpus:
		if !o.offers("audio", "OPUS") {
			return webrtc.RTPCodecCapability{}, "audio: the offer has no Opus, so audio is dropped"
		}
		return webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2, SDPFmtpLine: "minptime=10;useinbandfec=1"}, ""
	case media.CodecPCMU, media.CodecPCMA:
		name := string(t.Codec)
		if (t.SampleRate != 0 && t.SampleRate != 8000) || t.Channels > 1 {
			return webrtc.RTPCodecCapability{}, fmt.Sprintf("audio: %s at %d Hz/%d channels has no WebRTC payload format, so audio is dropped",
				name, t.SampleRate, t.Channels)
		}
		if !o.offers("audio", name) {
			return webrtc.RTPCodecCapability{}, "audio: the offer has no " + name + " (no transcoding), so audio is dropped"
		}
		mime := webrtc.MimeTypePCMU
		if t.Codec == media.CodecPCMA {
			mime = webrtc.MimeTypePCMA
		}
		return webrtc.RTPCodecCapability{MimeType: mime, ClockRate: 8000, Channels: 1}, ""
	case media.CodecAAC:
		return webrtc.RTPCodecCapability{}, "audio: AAC cannot be carried over WebRTC without transcoding, so audio is dropped"
	}
	return webrtc.RTPCodecCapability{}, fmt.Sprintf("%s: %s cannot be carried over WebRTC, so it is dropped", t.Kind(), t.Codec)
}
