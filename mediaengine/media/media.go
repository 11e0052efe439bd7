// Package media holds the codec-neutral vocabulary every part of the engine
// shares: a stream's tracks and the access units (frames) that flow from an
// input (RTSP pull or push, a file, later GB28181 and WHIP) through the hub
// to every output (HTTP-FLV, HTTP-fMP4, HLS, RTSP play, recording).
//
// Inputs depacketise once into Frames; the hub fans the same *Frame out to
// every reader, so a Frame and the slices it holds are immutable once
// published.
package media

import (
	"fmt"
	"time"
)

// Codec names a codec as the engine reports it in stream listings and hooks.
// Values are append-only.
type Codec string

const (
	CodecH264 Codec = "H264"
	CodecH265 Codec = "H265"
	CodecAAC  Codec = "AAC"
	CodecPCMA Codec = "PCMA" // G.711 A-law
	CodecPCMU Codec = "PCMU" // G.711 µ-law
	CodecOpus Codec = "Opus"
	// CodecVP8 is VP8 video (RFC 6386) as WebRTC publishers send it. A
	// VP8 frame has no NAL units: Frame.Payload holds the whole
	// compressed frame.
	CodecVP8 Codec = "VP8"
)

// Kind is video or audio.
type Kind string

const (
	KindVideo Kind = "video"
	KindAudio Kind = "audio"
)

// Kind reports whether the codec carries video or audio.
func (c Codec) Kind() Kind {
	switch c {
	case CodecH264, CodecH265, CodecVP8:
		return KindVideo
	}
	return KindAudio
}

// NALUnits reports whether the codec's frames are NAL units (Frame.NALUs)
// rather than one payload (Frame.Payload).
func (c Codec) NALUnits() bool { return c == CodecH264 || c == CodecH265 }

// Track describes one elementary stream of a stream. Parameter sets may be
// unknown when the track is announced (an SDP without sprop-parameter-sets);
// the input fills them from the first in-band parameter sets before it
// publishes the first keyframe, and outputs read them from the Track when
// they start, so a Track is complete by the time a reader sees a keyframe.
type Track struct {
	// ID is the track's index within its stream, stable for the stream's
	// lifetime.
	ID    int
	Codec Codec
	// ClockRate is the RTP clock of the source (90000 for video, usually the
	// sample rate for audio); informational once frames carry durations.
	ClockRate int

	// Video: coded size, from the SPS.
	Width, Height int
	// Video parameter sets without start codes: H.264 uses SPS and PPS,
	// H.265 uses VPS, SPS and PPS.
	VPS, SPS, PPS []byte

	// Audio.
	SampleRate int
	Channels   int
	// AudioSpecificConfig is the AAC decoder configuration (ISO/IEC 14496-3
	// 1.6.2.1), as in the SDP's config= parameter.
	AudioSpecificConfig []byte
}

// Kind reports the track's kind.
func (t *Track) Kind() Kind { return t.Codec.Kind() }

// Ready reports whether an output has what it needs to describe the track:
// parameter sets for video, a decoder configuration for AAC.
func (t *Track) Ready() bool {
	switch t.Codec {
	case CodecH264:
		return len(t.SPS) > 0 && len(t.PPS) > 0
	case CodecH265:
		return len(t.VPS) > 0 && len(t.SPS) > 0 && len(t.PPS) > 0
	case CodecAAC:
		return len(t.AudioSpecificConfig) >= 2
	}
	return true
}

func (t *Track) String() string {
	if t.Kind() == KindVideo {
		return fmt.Sprintf("#%d %s %dx%d", t.ID, t.Codec, t.Width, t.Height)
	}
	return fmt.Sprintf("#%d %s %dHz/%dch", t.ID, t.Codec, t.SampleRate, t.Channels)
}

// Frame is one access unit of one track.
//
// PTS and DTS are offsets from the stream's common time origin, so frames of
// different tracks of one stream are comparable; DTS is monotonic per track
// (inputs repair jumps and wrap-around) and equals PTS when the codec has no
// reordering. For audio, one Frame may carry one codec frame (an AAC raw
// data block, an Opus packet) or a run of G.711 samples.
type Frame struct {
	Track    *Track
	PTS      time.Duration
	DTS      time.Duration
	Keyframe bool // video: an IDR/IRAP access unit a decoder can start at
	// NALUs holds a video access unit's NAL units without start codes or
	// length prefixes, in decoding order; parameter sets may be among them.
	NALUs [][]byte
	// Payload holds an audio frame: an AAC raw data block without ADTS
	// header, an Opus packet, or G.711 samples; or a VP8 frame.
	Payload []byte
}

// Size is the frame's payload size in bytes.
func (f *Frame) Size() int {
	n := len(f.Payload)
	for _, nalu := range f.NALUs {
		n += len(nalu)
	}
	return n
}

// Path identifies a stream: virtual host, application and stream id, as in
// ZLMediaKit and the contract's Vhost/App/streamId fields.
type Path struct {
	Vhost  string `json:"vhost"`
	App    string `json:"app"`
	Stream string `json:"stream"`
}

// DefaultVhost is the vhost of URLs that do not name one.
const DefaultVhost = "__defaultVhost__"

func (p Path) String() string {
	if p.Vhost == "" || p.Vhost == DefaultVhost {
		return p.App + "/" + p.Stream
	}
	return p.Vhost + "/" + p.App + "/" + p.Stream
}
