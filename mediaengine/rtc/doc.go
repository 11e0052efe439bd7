// Package rtc is the engine's WebRTC server: WHEP playback of any hub
// stream and WHIP publishing into the hub, on github.com/pion/webrtc/v4.
//
// All peers share one UDP port (the ICE UDP mux) and, as a fallback for
// networks that block UDP, one ICE-TCP port; a session is found by its ICE
// username fragment, so the engine needs no port range for WebRTC. Writes
// to the UDP port are queued and sent in batches with sendmmsg by one
// writer (batch_conn.go): a frame fanned out to many viewers costs a
// system call per batch, not per viewer.
//
// Nothing is transcoded. A WHEP viewer is a hub reader of the stream's
// webrtc-rtp format (rtp_format.go): each frame is packetised once
// (rtpcodec) for all the stream's viewers, and a viewer writes those shared,
// never modified payloads under its own RTP header (SSRC, sequence number,
// timestamp base, payload type) to pion, which encrypts them with the
// viewer's SRTP keys into a buffer of its own. Its bounded queue drops
// frames until the next keyframe when the viewer falls behind. The engine's
// NACK responder (nack_responder.go) answers NACKs from a per-viewer
// history of references to the shared payloads (on the RTX stream, RFC
// 4588, when the viewer offered RTX), and pion's interceptors send RTCP
// reports. Audio the browser cannot take (AAC, or G.711
// it did not offer) is left out and the session says so in its notes;
// video in a codec the viewer did not offer (H.264, VP8, or H.265 a
// browser offered) leaves the session without video. A viewer starts at a keyframe that arrives after
// it joined, and asks the source for one (RequestKeyframe): a WHIP
// publisher relays that as a PLI; a camera's next GOP comes on its own.
// Viewers' PLI and FIR are relayed the same way.
//
// A WHIP publisher is admitted by on_publish with the tracks the answer
// negotiated (H.264, VP8, Opus, G.711: what the hub carries; H.264 is
// answered first when both video codecs are offered, since FLV, HLS and
// RTSP players take it and only fMP4, recording, RTSP and WHEP take VP8),
// before the answer is sent. pion's NACK generator asks the publisher for
// lost packets and unwraps its RTX retransmissions; the RTP is put back in
// order (retransmissions arrive late) and depacketised into the hub like
// an RTSP publisher's, and keyframe requests from any reader reach it as
// PLI.
//
// Signalling is plain HTTP (RFC 9725 WHIP, and WHEP drafted on it): POST
// an SDP offer, get the answer with a session resource URL (Location);
// DELETE it to leave, PATCH it with an SDP fragment for trickle ICE.
package rtc
