package flv

import (
	"bytes"
	"time"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
)

// Continue implements hub.Continuer: what an HTTP-FLV player of a stream
// with tracks prev needs before this muxer's first tag when a new
// publisher takes the stream over (a camera reconnected).
//
//   - The same codecs with the same decoder configuration: nothing; the
//     tags simply go on (their timestamps were moved on by the hub).
//   - The same codecs with a new configuration (a new SPS: another
//     resolution or profile; another AAC configuration): onMetaData and
//     new sequence header tags at the first tag's time, which FLV players
//     (flv.js, mpegts.js, ffmpeg) apply mid-stream.
//   - Another codec, or a track added or lost: a whole new FLV header, as
//     players that follow a source switch expect.
func (m *Muxer) Continue(prev []*media.Track, at time.Duration) []byte {
	old, err := NewMuxer(prev)
	if err != nil || !sameCodecs(old.video, m.video) || !sameCodecs(old.audio, m.audio) {
		return m.header
	}
	videoSame := m.video == nil || sameVideoConfig(old.video, m.video)
	audioSame := m.audio == nil || m.audio.Codec != media.CodecAAC || bytes.Equal(old.audio.AudioSpecificConfig, m.audio.AudioSpecificConfig)
	if videoSame && audioSame && old.soundHeader == m.soundHeader {
		return nil
	}
	ms := uint32(at.Milliseconds())
	b := appendTag(nil, TagScript, ms, onMetaData(m.metadata()))
	if !videoSame {
		seq, err := videoSequenceHeader(m.video)
		if err != nil {
			return m.header
		}
		b = appendTag(b, TagVideo, ms, seq)
	}
	if m.audio != nil && m.audio.Codec == media.CodecAAC && !audioSame {
		b = appendTag(b, TagAudio, ms, append([]byte{m.soundHeader, 0}, m.audio.AudioSpecificConfig...))
	}
	return b
}

// sameCodecs says whether two tracks FLV carries (either may be nil) have
// the same codec.
func sameCodecs(a, b *media.Track) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Codec == b.Codec
}

func sameVideoConfig(a, b *media.Track) bool {
	return bytes.Equal(a.SPS, b.SPS) && bytes.Equal(a.PPS, b.PPS) && bytes.Equal(a.VPS, b.VPS)
}

var _ hub.Continuer = (*Muxer)(nil)
