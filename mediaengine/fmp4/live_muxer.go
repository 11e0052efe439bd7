package fmp4

import (
	"bytes"
	"time"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
)

// LiveFormat is the HTTP-fMP4 hub format: a long-lived fragmented MP4,
// ftyp+moov once, then one moof+mdat per frame.
type LiveFormat struct{}

// Name implements hub.Format.
func (LiveFormat) Name() string { return "fmp4" }

// NewMuxer implements hub.Format.
func (LiveFormat) NewMuxer(tracks []*media.Track) (hub.Muxer, error) { return NewLiveMuxer(tracks) }

// LiveMuxer writes one fragment per frame. A sample's duration is only
// known from the next frame of its track, so each frame is held until its
// successor arrives: the stream runs one frame behind (40 ms at 25 fps),
// and every sample carries its true duration, which players need for
// smooth audio.
type LiveMuxer struct {
	tracks   []*media.Track
	init     []byte
	pending  []*media.Frame // by track ID
	seq      uint32
	hasVideo bool
	samples  [1]Sample
	runs     [1]Run
}

// NewLiveMuxer makes a muxer for the tracks fMP4 carries.
func NewLiveMuxer(tracks []*media.Track) (*LiveMuxer, error) {
	m := &LiveMuxer{pending: make([]*media.Frame, len(tracks))}
	for _, t := range tracks {
		switch t.Codec {
		case media.CodecH264, media.CodecH265, media.CodecVP8, media.CodecAAC, media.CodecOpus, media.CodecPCMA, media.CodecPCMU:
			m.tracks = append(m.tracks, t)
			if t.Kind() == media.KindVideo {
				m.hasVideo = true
			}
		}
	}
	if len(m.tracks) == 0 {
		return nil, ErrUnsupported
	}
	init, err := InitSegment(m.tracks)
	if err != nil {
		return nil, err
	}
	m.init = init
	return m, nil
}

// Header implements hub.Muxer: the initialisation segment.
func (m *LiveMuxer) Header() []byte { return m.init }

// Frame implements hub.Muxer: it returns the fragment of the track's
// previous frame.
func (m *LiveMuxer) Frame(f *media.Frame) (hub.Packet, bool) {
	id := f.Track.ID
	if id < 0 || id >= len(m.pending) || !m.carries(f.Track) {
		return hub.Packet{}, false
	}
	prev := m.pending[id]
	m.pending[id] = f
	if prev == nil {
		return hub.Packet{}, false
	}
	scale := Timescale(f.Track)
	base := ToTimescale(prev.DTS, scale)
	dur := ToTimescale(f.DTS, scale) - base
	if f.DTS < prev.DTS {
		dur = 0
	}
	m.seq++
	m.samples[0] = Sample{Frame: prev, Duration: uint32(dur)}
	m.runs[0] = Run{Track: f.Track, BaseTime: base, Samples: m.samples[:]}
	data := Fragment(m.seq, m.runs[:])
	m.samples[0], m.runs[0] = Sample{}, Run{}
	video := f.Track.Kind() == media.KindVideo
	return hub.Packet{Frame: prev, Data: data, Keyframe: video && prev.Keyframe || !m.hasVideo}, true
}

func (m *LiveMuxer) carries(t *media.Track) bool {
	for _, c := range m.tracks {
		if c == t {
			return true
		}
	}
	return false
}

// Continue implements hub.Continuer: an HTTP-fMP4 player of a stream with
// tracks prev needs nothing when the new publisher's initialisation
// segment is the same (the fragments go on, their decode times moved on by
// the hub), and the new ftyp+moov otherwise: players (MSE, ffmpeg) take an
// initialisation segment mid-stream as a new configuration.
func (m *LiveMuxer) Continue(prev []*media.Track, _ time.Duration) []byte {
	old, err := NewLiveMuxer(prev)
	if err == nil && bytes.Equal(old.init, m.init) {
		return nil
	}
	return m.init
}

var _ hub.Continuer = (*LiveMuxer)(nil)
