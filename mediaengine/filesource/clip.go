package filesource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/asticode/go-astits"

	"github.com/svcplatform/svc/mediaengine/codec/aac"
	"github.com/svcplatform/svc/mediaengine/codec/h264"
	"github.com/svcplatform/svc/mediaengine/codec/h265"
	"github.com/svcplatform/svc/mediaengine/codec/nalu"
	"github.com/svcplatform/svc/mediaengine/media"
)

// MaxClipBytes bounds the file a clip is loaded from; a clip lives in
// memory.
const MaxClipBytes = 64 << 20

// Clip is a demuxed file: its tracks and every frame, timestamps starting
// at zero, ordered by DTS.
type Clip struct {
	Tracks []*media.Track
	Frames []*media.Frame
	// Duration is how far timestamps advance per loop: the end of the
	// longest track (its last DTS plus one frame).
	Duration time.Duration
}

// LoadFile loads a clip from an MPEG-TS file, or the built-in demo clip
// for Builtin.
func LoadFile(path string) (*Clip, error) {
	if path == Builtin {
		return Load(bytes.NewReader(demoClip))
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("filesource: %w", err)
	}
	if st.Size() > MaxClipBytes {
		return nil, fmt.Errorf("filesource: %s is %d bytes, more than the %d a clip may have", path, st.Size(), MaxClipBytes)
	}
	// The clip is read whole: go-astits loses PES packets when its reader
	// returns short reads (as an io.LimitReader over a file does).
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("filesource: %w", err)
	}
	return Load(bytes.NewReader(b))
}

// Load demuxes an MPEG-TS stream.
func Load(r io.Reader) (*Clip, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dmx := astits.NewDemuxer(ctx, r)
	c := &Clip{}
	tracks := map[uint16]*media.Track{}
	var pts0 *int64
	for {
		d, err := dmx.NextData()
		if errors.Is(err, astits.ErrNoMorePackets) || errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("filesource: demux: %w", err)
		}
		if d.PMT != nil && len(tracks) == 0 {
			for _, es := range d.PMT.ElementaryStreams {
				var codec media.Codec
				switch es.StreamType {
				case astits.StreamTypeH264Video:
					codec = media.CodecH264
				case astits.StreamTypeH265Video:
					codec = media.CodecH265
				case astits.StreamTypeAACAudio:
					codec = media.CodecAAC
				default:
					continue
				}
				t := &media.Track{ID: len(c.Tracks), Codec: codec, ClockRate: 90000}
				tracks[es.ElementaryPID] = t
				c.Tracks = append(c.Tracks, t)
			}
		}
		if d.PES == nil || d.PES.Header.OptionalHeader == nil || d.PES.Header.OptionalHeader.PTS == nil {
			continue
		}
		t := tracks[d.PID]
		if t == nil {
			continue
		}
		oh := d.PES.Header.OptionalHeader
		pts := oh.PTS.Base
		dts := pts
		if oh.DTS != nil {
			dts = oh.DTS.Base
		}
		if pts0 == nil {
			pts0 = &dts
		}
		toDur := func(v int64) time.Duration { return time.Duration(v-*pts0) * time.Second / 90000 }
		if err := c.addPES(t, toDur(pts), toDur(dts), d.PES.Data); err != nil {
			return nil, err
		}
	}
	if len(c.Frames) == 0 {
		return nil, errors.New("filesource: no H.264, H.265 or AAC frames in the file")
	}
	c.normalise()
	for _, t := range c.Tracks {
		if !t.Ready() {
			return nil, fmt.Errorf("filesource: track %s has no parameter sets", t)
		}
	}
	return c, nil
}

func (c *Clip) addPES(t *media.Track, pts, dts time.Duration, data []byte) error {
	switch t.Codec {
	case media.CodecAAC:
		cfg, blocks, err := aac.SplitADTS(data)
		if err != nil {
			return fmt.Errorf("filesource: %w", err)
		}
		if t.AudioSpecificConfig == nil {
			t.SampleRate, t.Channels, t.ClockRate = cfg.SampleRate, cfg.Channels, cfg.SampleRate
			t.AudioSpecificConfig = cfg.Marshal()
		}
		for i, b := range blocks {
			ts := pts + time.Duration(i*aac.SamplesPerFrame)*time.Second/time.Duration(t.SampleRate)
			c.Frames = append(c.Frames, &media.Frame{Track: t, PTS: ts, DTS: ts, Payload: b})
		}
	default:
		units, err := nalu.SplitAnnexB(data)
		if err != nil {
			return fmt.Errorf("filesource: %w", err)
		}
		f := &media.Frame{Track: t, PTS: pts, DTS: dts}
		for _, u := range units {
			if t.Codec == media.CodecH264 {
				switch h264.Type(u) {
				case h264.NALAUD, h264.NALFiller:
					continue
				case h264.NALSPS:
					t.SPS = u
				case h264.NALPPS:
					t.PPS = u
				case h264.NALIDR:
					f.Keyframe = true
				}
			} else {
				typ := h265.Type(u)
				switch {
				case typ == h265.NALAUD:
					continue
				case typ == h265.NALVPS:
					t.VPS = u
				case typ == h265.NALSPS:
					t.SPS = u
				case typ == h265.NALPPS:
					t.PPS = u
				case h265.IsIRAP(typ):
					f.Keyframe = true
				}
			}
			f.NALUs = append(f.NALUs, u)
		}
		if len(f.NALUs) > 0 {
			c.Frames = append(c.Frames, f)
		}
	}
	return nil
}

// normalise orders frames by DTS, starts the clip at its first keyframe
// with timestamps from zero, and works out the loop duration.
//
// The loop follows the video: a player judges a live stream's continuity
// by its video, and a clip whose audio runs past its video (the built-in
// one's by 85 ms) must not make every loop skip video frames. So the
// duration is the video track's span (its last DTS plus one frame), and
// frames of other tracks at or past it are dropped, so that nothing of one
// loop overlaps the next. Without video the longest track sets it.
func (c *Clip) normalise() {
	sort.SliceStable(c.Frames, func(i, j int) bool { return c.Frames[i].DTS < c.Frames[j].DTS })
	for i, f := range c.Frames {
		if f.Keyframe {
			c.Frames = c.Frames[i:]
			break
		}
	}
	base := c.Frames[0].DTS
	for _, f := range c.Frames {
		f.DTS -= base
		f.PTS -= base
	}
	last := map[*media.Track][2]time.Duration{}
	for _, f := range c.Frames {
		l := last[f.Track]
		last[f.Track] = [2]time.Duration{l[1], f.DTS}
	}
	var video time.Duration
	for t, l := range last {
		span := l[1] + (l[1] - l[0])
		c.Duration = max(c.Duration, span)
		if t.Kind() == media.KindVideo {
			video = max(video, span)
		}
	}
	if video == 0 {
		return
	}
	c.Duration = video
	kept := c.Frames[:0]
	for _, f := range c.Frames {
		if f.DTS < c.Duration {
			kept = append(kept, f)
		}
	}
	c.Frames = kept
}
