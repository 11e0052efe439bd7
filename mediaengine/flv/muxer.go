package flv

import (
	"fmt"

	"github.com/svcplatform/svc/mediaengine/codec/h264"
	"github.com/svcplatform/svc/mediaengine/codec/h265"
	"github.com/svcplatform/svc/mediaengine/codec/nalu"
	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
)

// Format is the HTTP-FLV hub format.
type Format struct{}

// Name implements hub.Format.
func (Format) Name() string { return "flv" }

// NewMuxer implements hub.Format.
func (Format) NewMuxer(tracks []*media.Track) (hub.Muxer, error) { return NewMuxer(tracks) }

// ErrNoTrack is returned when a stream has no track FLV can carry; it
// matches hub.ErrNoCarriedTrack.
var ErrNoTrack error = noTrackError{}

type noTrackError struct{}

func (noTrackError) Error() string {
	return "flv: the stream has no H.264, H.265, AAC or G.711 track (FLV has no VP8 or Opus format)"
}

func (noTrackError) Is(target error) bool { return target == hub.ErrNoCarriedTrack }

// Muxer turns one stream's frames into FLV tags. It carries the first
// video track and the first audio track FLV supports and ignores others.
type Muxer struct {
	video, audio *media.Track
	header       []byte
	soundHeader  byte
}

// NewMuxer makes a muxer for tracks, which must be ready.
func NewMuxer(tracks []*media.Track) (*Muxer, error) {
	m := &Muxer{}
	for _, t := range tracks {
		switch t.Codec {
		case media.CodecH264, media.CodecH265:
			if m.video == nil {
				m.video = t
			}
		case media.CodecAAC, media.CodecPCMA, media.CodecPCMU:
			if m.audio == nil {
				m.audio = t
			}
		}
	}
	if m.video == nil && m.audio == nil {
		return nil, ErrNoTrack
	}
	h := Header(m.audio != nil, m.video != nil)
	h = appendTag(h, TagScript, 0, onMetaData(m.metadata()))
	if m.video != nil {
		seq, err := videoSequenceHeader(m.video)
		if err != nil {
			return nil, err
		}
		h = appendTag(h, TagVideo, 0, seq)
	}
	if m.audio != nil {
		switch m.audio.Codec {
		case media.CodecAAC:
			m.soundHeader = 0xaf // AAC, 44 kHz, 16-bit, stereo: fixed for AAC
			h = appendTag(h, TagAudio, 0, append([]byte{m.soundHeader, 0}, m.audio.AudioSpecificConfig...))
		case media.CodecPCMA:
			m.soundHeader = 7<<4 | 1<<1 // 8 kHz is implied for G.711
		case media.CodecPCMU:
			m.soundHeader = 8<<4 | 1<<1
		}
		if m.audio.Channels == 2 {
			m.soundHeader |= 1
		}
	}
	m.header = h
	return m, nil
}

func (m *Muxer) metadata() []amfProp {
	var p []amfProp
	if v := m.video; v != nil {
		p = append(p, amfProp{"width", float64(v.Width)}, amfProp{"height", float64(v.Height)})
		if v.Codec == media.CodecH264 {
			p = append(p, amfProp{"videocodecid", float64(7)})
			if sps, err := h264.ParseSPS(v.SPS); err == nil && sps.FrameRate > 0 {
				p = append(p, amfProp{"framerate", sps.FrameRate})
			}
		} else {
			p = append(p, amfProp{"videocodecid", "hvc1"})
		}
	}
	if a := m.audio; a != nil {
		id := map[media.Codec]float64{media.CodecAAC: 10, media.CodecPCMA: 7, media.CodecPCMU: 8}[a.Codec]
		p = append(p, amfProp{"audiocodecid", id}, amfProp{"audiosamplerate", float64(a.SampleRate)},
			amfProp{"stereo", a.Channels == 2})
	}
	return p
}

func videoSequenceHeader(t *media.Track) ([]byte, error) {
	if t.Codec == media.CodecH264 {
		c, err := h264.NewDecoderConfig(t.SPS, t.PPS)
		if err != nil {
			return nil, fmt.Errorf("flv: %w", err)
		}
		return append([]byte{1<<4 | 7, 0, 0, 0, 0}, c.Marshal()...), nil
	}
	c, err := h265.NewDecoderConfig(t.VPS, t.SPS, t.PPS)
	if err != nil {
		return nil, fmt.Errorf("flv: %w", err)
	}
	// Enhanced FLV: IsExHeader | keyframe | PacketTypeSequenceStart, FourCC.
	const packetSequenceStart = 0
	return append([]byte{0x80 | 1<<4 | packetSequenceStart, 'h', 'v', 'c', '1'}, c.Marshal()...), nil
}

// appendTag appends a whole tag with its PreviousTagSize.
func appendTag(dst []byte, typ byte, ms uint32, body []byte) []byte {
	dst = appendTagHeader(dst, typ, len(body), ms)
	dst = append(dst, body...)
	return appendPrevSize(dst, len(body))
}

// Header implements hub.Muxer: the file header, onMetaData and the
// sequence headers.
func (m *Muxer) Header() []byte { return m.header }

// Frame implements hub.Muxer: one tag per frame, in one allocation.
func (m *Muxer) Frame(f *media.Frame) (hub.Packet, bool) {
	switch f.Track {
	case m.video:
		return hub.Packet{Data: m.videoTag(f), Keyframe: f.Keyframe}, true
	case m.audio:
		return hub.Packet{Data: m.audioTag(f), Keyframe: m.video == nil}, true
	}
	return hub.Packet{}, false
}

func (m *Muxer) videoTag(f *media.Frame) []byte {
	units := f.NALUs
	body := 5 + nalu.LengthPrefixedSize(units)
	hevc := m.video.Codec == media.CodecH265
	if hevc {
		body = 8 + nalu.LengthPrefixedSize(units)
	}
	b := make([]byte, 0, TagHeaderSize+body+4)
	b = appendTagHeader(b, TagVideo, body, uint32(f.DTS.Milliseconds()))
	frameType := byte(2)
	if f.Keyframe {
		frameType = 1
	}
	cts := int32((f.PTS - f.DTS).Milliseconds())
	if hevc {
		b = append(b, 0x80|frameType<<4|1, 'h', 'v', 'c', '1', byte(cts>>16), byte(cts>>8), byte(cts))
	} else {
		b = append(b, frameType<<4|7, 1, byte(cts>>16), byte(cts>>8), byte(cts))
	}
	b = nalu.AppendLengthPrefixed(b, units)
	return appendPrevSize(b, body)
}

func (m *Muxer) audioTag(f *media.Frame) []byte {
	body := 1 + len(f.Payload)
	if m.audio.Codec == media.CodecAAC {
		body++
	}
	b := make([]byte, 0, TagHeaderSize+body+4)
	b = appendTagHeader(b, TagAudio, body, uint32(f.DTS.Milliseconds()))
	b = append(b, m.soundHeader)
	if m.audio.Codec == media.CodecAAC {
		b = append(b, 1)
	}
	b = append(b, f.Payload...)
	return appendPrevSize(b, body)
}
