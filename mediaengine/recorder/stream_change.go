package recorder

import (
	"bytes"
	"time"

	"github.com/svcplatform/svc/mediaengine/codec/h264"
	"github.com/svcplatform/svc/mediaengine/codec/h265"
	"github.com/svcplatform/svc/mediaengine/codec/vp8"
	"github.com/svcplatform/svc/mediaengine/fmp4"
	"github.com/svcplatform/svc/mediaengine/media"
)

// Changes of a stream that start a new segment although its tracks stay
// the same.
//
// A DTS that moves back more than maxBackwardStep or forward more than
// maxForwardStep from its track's previous frame is a clock jump (an
// input that passes a source's clock through, such as RTMP, or a source
// that restarted its clock). A jump is not written as a jump: the track's
// frames are shifted so that the first one after it follows the last one
// before it by one frame duration, the file stays playable and no frame is
// lost, and the next segment starts at the next keyframe, so that a file
// holds one stretch of the source's clock. A step of a few seconds is
// normal (an encoder paused, a server sending its GOP cache quickly) and is
// kept as it is.
//
// A stream whose video has had no keyframe for noKeyframeCut, in a segment
// already past its duration, is cut at a plain frame: the next file starts
// without a keyframe (the sidecar's first part says so, and playback
// starts at the first keyframe), rather than a file growing without bound
// or the frames up to the next keyframe being dropped.
const (
	maxForwardStep  = 10 * time.Second
	maxBackwardStep = time.Second
	noKeyframeCut   = 10 * time.Second
)

// More reasons a file closes (FileInfo.Reason).
const (
	// ReasonParameters: the video's parameter sets changed (a new
	// resolution); the next file's initialisation segment carries them.
	ReasonParameters = "parameters"
	ReasonClockJump  = "clock-jump"
	ReasonNoKeyframe = "no-keyframe"
)

// withParameters answers t updated with the parameter sets a keyframe
// carries in band, and whether they differ from t's; t itself is never
// changed (the hub's readers share it).
func withParameters(t *media.Track, f *media.Frame) (*media.Track, bool) {
	if t.Codec == media.CodecVP8 {
		// A VP8 keyframe carries its size; the file's sample entry has it.
		w, h, ok := vp8.KeyframeSize(f.Payload)
		if !ok || (w == t.Width && h == t.Height) {
			return t, false
		}
		n := *t
		n.Width, n.Height = w, h
		return &n, true
	}
	var vps, sps, pps []byte
	for _, u := range f.NALUs {
		switch t.Codec {
		case media.CodecH264:
			switch h264.Type(u) {
			case h264.NALSPS:
				sps = u
			case h264.NALPPS:
				pps = u
			}
		case media.CodecH265:
			switch h265.Type(u) {
			case h265.NALVPS:
				vps = u
			case h265.NALSPS:
				sps = u
			case h265.NALPPS:
				pps = u
			}
		}
	}
	differs := func(inBand, known []byte) bool { return inBand != nil && !bytes.Equal(inBand, known) }
	if !differs(vps, t.VPS) && !differs(sps, t.SPS) && !differs(pps, t.PPS) {
		return t, false
	}
	n := *t
	if vps != nil {
		n.VPS = bytes.Clone(vps)
	}
	if sps != nil {
		n.SPS = bytes.Clone(sps)
		switch t.Codec {
		case media.CodecH264:
			if s, err := h264.ParseSPS(sps); err == nil {
				n.Width, n.Height = s.Width, s.Height
			}
		case media.CodecH265:
			if s, err := h265.ParseSPS(sps); err == nil {
				n.Width, n.Height = s.Width, s.Height
			}
		}
	}
	if pps != nil {
		n.PPS = bytes.Clone(pps)
	}
	return &n, true
}

// shift answers the DTS at which track i's frame f is written: its own
// DTS moved by the track's accumulated repair of clock jumps. A new jump
// is repaired here and marks the segment to close at the next boundary.
func (w *streamWriter) shift(i int, f *media.Frame) time.Duration {
	dts := f.DTS + w.off[i]
	if !w.seen[i] {
		w.seen[i] = true
		w.last[i] = dts
		return dts
	}
	if step := dts - w.last[i]; step > maxForwardStep || step < -maxBackwardStep {
		next := w.last[i] + w.frameDur(i)
		w.off[i] += next - dts
		dts = next
		w.jumped = true
	}
	w.last[i] = dts
	return dts
}

// frameDur is track i's latest frame duration as a time.
func (w *streamWriter) frameDur(i int) time.Duration {
	t := w.tracks[i]
	d := w.lastDur[i]
	if d == 0 {
		d = defaultDuration(t)
	}
	return time.Duration(d) * time.Second / time.Duration(fmp4.Timescale(t))
}
