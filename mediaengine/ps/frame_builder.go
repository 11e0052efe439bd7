package ps

import (
	"time"

	"github.com/svcplatform/svc/mediaengine/codec/aac"
	"github.com/svcplatform/svc/mediaengine/codec/h264"
	"github.com/svcplatform/svc/mediaengine/codec/h265"
	"github.com/svcplatform/svc/mediaengine/codec/nalu"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtpcodec"
)

// g711Rate is G.711's sample rate (ITU-T G.711), the only one GB/T 28181
// devices use.
const g711Rate = 8000

// FrameBuilder turns access units into the engine's frames: it recognises
// each stream's codec (from the PSM, or from the data when a device sends
// no map), fills the track's parameter sets and audio configuration from
// the first in-band ones, splits Annex-B into NAL units and ADTS into raw
// AAC blocks, and places PS timestamps on the stream's common timeline
// (unwrapped, jumps repaired). It is owned by one goroutine.
type FrameBuilder struct {
	// timeline places the stream's one 90 kHz PS clock: all its
	// elementary streams share it, so audio stays in sync with video.
	timeline *rtpcodec.Timeline
	streams  map[byte]*esTrack
	tracks   []*media.Track
	// Unrecognised counts access units of streams whose codec is unknown
	// or unsupported (MPEG audio, SVAC, a video stream before its first
	// parameter set names the codec).
	Unrecognised uint64
}

type esTrack struct {
	track   *media.Track
	lastDTS time.Duration
	started bool
	// The previous unit's DTS and the interval between units, for access
	// units that share a PES and its timestamp.
	lastUnitDTS  time.Duration
	haveLastUnit bool
	// lastUnitFrames is how many access units the previous unit held.
	lastUnitFrames int
	interval       time.Duration
	// fixed is set once the track is published: its parameter sets no
	// longer change, because outputs read them concurrently.
	fixed bool
}

// NewFrameBuilder returns an empty builder.
func NewFrameBuilder() *FrameBuilder {
	return &FrameBuilder{timeline: rtpcodec.NewTimeline(rtpcodec.NewStreamClock(), 90000), streams: map[byte]*esTrack{}}
}

// Tracks lists the tracks recognised so far, in the order their streams
// appeared.
func (b *FrameBuilder) Tracks() []*media.Track { return b.tracks }

// Fix freezes the tracks' descriptions: call it when they are published.
func (b *FrameBuilder) Fix() {
	for _, s := range b.streams {
		s.fixed = true
	}
}

// Add converts one access unit into frames appended to out. Frames of a
// track whose description is not complete yet (video before its parameter
// sets) are still returned; the caller decides what to publish.
func (b *FrameBuilder) Add(u Unit, arrival time.Time, out []*media.Frame) []*media.Frame {
	s := b.streams[u.StreamID]
	if s == nil {
		codec, ok := recognise(u)
		if !ok {
			b.Unrecognised++
			return out
		}
		t := &media.Track{ID: len(b.tracks), Codec: codec, ClockRate: 90000}
		if codec == media.CodecPCMA || codec == media.CodecPCMU {
			t.SampleRate, t.Channels = g711Rate, 1
		}
		s = &esTrack{track: t}
		b.streams[u.StreamID] = s
		b.tracks = append(b.tracks, t)
	}
	dts := b.timeline.Position(uint32(u.DTS), arrival)
	if s.started && dts <= s.lastDTS { // DTS runs forward per track
		dts = s.lastDTS + time.Millisecond
	}
	s.started, s.lastDTS = true, dts
	pts := dts + time.Duration((u.PTS-u.DTS)&(1<<33-1))*time.Second/90000
	if pts-dts > 10*time.Second { // a PTS before its DTS: broken, use the DTS
		pts = dts
	}
	t := s.track
	switch t.Codec {
	case media.CodecH264, media.CodecH265:
		return b.video(s, pts, dts, u.Data, out)
	case media.CodecAAC:
		cfg, blocks, err := aac.SplitADTS(u.Data)
		if err != nil || cfg.SampleRate == 0 {
			b.Unrecognised++
			return out
		}
		if !s.fixed && t.AudioSpecificConfig == nil {
			t.SampleRate, t.Channels, t.AudioSpecificConfig = cfg.SampleRate, cfg.Channels, cfg.Marshal()
		}
		for i, blk := range blocks {
			ts := pts + time.Duration(i*aac.SamplesPerFrame)*time.Second/time.Duration(cfg.SampleRate)
			out = append(out, &media.Frame{Track: t, PTS: ts, DTS: ts, Payload: blk})
		}
		return out
	default:
		return append(out, &media.Frame{Track: t, PTS: pts, DTS: pts, Payload: u.Data})
	}
}

// video splits a unit into access units and returns a frame for each. A
// PES carries the PTS of the first access unit that starts in it, so a
// muxer that packs small frames together (ffmpeg's VOB does) leaves the
// later ones without a timestamp: they are placed a frame interval apart,
// the interval learnt from the track's previous timestamps.
func (b *FrameBuilder) video(s *esTrack, pts, dts time.Duration, data []byte, out []*media.Frame) []*media.Frame {
	units, err := nalu.SplitAnnexB(data)
	if err != nil {
		b.Unrecognised++
		return out
	}
	if s.haveLastUnit && dts > s.lastUnitDTS && dts-s.lastUnitDTS < time.Second {
		s.interval = (dts - s.lastUnitDTS) / time.Duration(s.lastUnitFrames)
	}
	s.haveLastUnit, s.lastUnitDTS, s.lastUnitFrames = true, dts, 0
	interval := s.interval
	if interval == 0 {
		interval = 40 * time.Millisecond
	}
	t := s.track
	var f *media.Frame
	slices := false
	for _, u := range units {
		first, skip := b.videoNALU(s, u)
		if f == nil || (slices && first) {
			if f != nil && len(f.NALUs) > 0 {
				out = append(out, f)
				s.lastUnitFrames++
				pts, dts = pts+interval, dts+interval
				s.lastDTS = dts
			}
			f, slices = &media.Frame{Track: t, PTS: pts, DTS: dts}, false
		}
		if skip {
			continue
		}
		if isSlice(t.Codec, u) {
			slices = true
			if isKey(t.Codec, u) {
				f.Keyframe = true
			}
		}
		f.NALUs = append(f.NALUs, u)
	}
	if f != nil && len(f.NALUs) > 0 {
		out = append(out, f)
	}
	s.lastUnitFrames++
	return out
}

// videoNALU records parameter sets and says whether u begins a new access
// unit (after slices of the current one) and whether it is dropped.
func (b *FrameBuilder) videoNALU(s *esTrack, u []byte) (first, skip bool) {
	t := s.track
	if t.Codec == media.CodecH264 {
		switch typ := h264.Type(u); typ {
		case h264.NALAUD:
			return true, true
		case h264.NALFiller:
			return false, true
		case h264.NALSPS:
			if !s.fixed && t.SPS == nil {
				if sps, err := h264.ParseSPS(u); err == nil {
					t.SPS, t.Width, t.Height = u, sps.Width, sps.Height
				}
			}
			return true, false
		case h264.NALPPS:
			if !s.fixed && t.PPS == nil {
				t.PPS = u
			}
			return true, false
		case h264.NALSEI:
			return true, false
		case h264.NALSlice, h264.NALIDR:
			// first_mb_in_slice is ue(v): 0, the first slice of a picture,
			// is the single bit 1.
			return len(u) > 1 && u[1]&0x80 != 0, false
		}
		return false, false
	}
	switch typ := h265.Type(u); {
	case typ == h265.NALAUD:
		return true, true
	case typ == h265.NALVPS:
		if !s.fixed && t.VPS == nil {
			t.VPS = u
		}
		return true, false
	case typ == h265.NALSPS:
		if !s.fixed && t.SPS == nil {
			if sps, err := h265.ParseSPS(u); err == nil {
				t.SPS, t.Width, t.Height = u, sps.Width, sps.Height
			}
		}
		return true, false
	case typ == h265.NALPPS:
		if !s.fixed && t.PPS == nil {
			t.PPS = u
		}
		return true, false
	case typ == 39: // prefix SEI
		return true, false
	case typ < 32: // a slice segment: first_slice_segment_in_pic_flag
		return len(u) > 2 && u[2]&0x80 != 0, false
	}
	return false, false
}

func isSlice(c media.Codec, u []byte) bool {
	if c == media.CodecH264 {
		typ := h264.Type(u)
		return typ == h264.NALSlice || typ == h264.NALIDR
	}
	return h265.Type(u) < 32
}

func isKey(c media.Codec, u []byte) bool {
	if c == media.CodecH264 {
		return h264.Type(u) == h264.NALIDR
	}
	return h265.IsIRAP(h265.Type(u))
}

// recognise names a stream's codec from its PSM type or, without one,
// from the data: video by the parameter sets it carries, audio by the
// ADTS syncword. G.711 without a map is not guessed: raw samples have no
// signature, and noise played as audio is worse than none.
func recognise(u Unit) (media.Codec, bool) {
	switch u.StreamType {
	case StreamTypeH264:
		return media.CodecH264, true
	case StreamTypeH265:
		return media.CodecH265, true
	case StreamTypeAAC:
		return media.CodecAAC, true
	case StreamTypeG711A:
		return media.CodecPCMA, true
	case StreamTypeG711U:
		return media.CodecPCMU, true
	case 0:
	default:
		return "", false
	}
	if u.StreamID <= idAudioLast {
		if _, err := aac.ParseADTS(u.Data); err == nil {
			return media.CodecAAC, true
		}
		return "", false
	}
	units, err := nalu.SplitAnnexB(u.Data)
	if err != nil {
		return "", false
	}
	for _, n := range units {
		// An H.265 parameter set has a two-byte header whose second byte
		// is 1 (layer 0, temporal id 1); no H.264 SPS starts like that,
		// since its second byte is profile_idc.
		if len(n) >= 2 && n[0]&0x81 == 0 && n[1] == 1 {
			if typ := h265.Type(n); typ == h265.NALVPS || typ == h265.NALSPS {
				return media.CodecH265, true
			}
		}
		if len(n) >= 2 && n[0]&0x80 == 0 && h264.Type(n) == h264.NALSPS {
			return media.CodecH264, true
		}
	}
	return "", false
}
