package recorder

import (
	"time"

	"github.com/svcplatform/svc/mediaengine/fmp4"
	"github.com/svcplatform/svc/mediaengine/media"
)

// streamWriter turns one publisher's frames into parts and segments. It
// is owned by its instance's goroutine.
//
// A sample's duration is known only from the next frame of its track, so
// each track's latest frame is held. A keyframe completes the held video
// frame and starts a new part; a part also closes once it spans
// PartDuration. A segment closes at a keyframe (or, without video, at any
// frame) past its duration or size: the held video frame ends where the
// keyframe starts, held audio takes its track's last duration, and the
// keyframe opens the next file.
type streamWriter struct {
	root     string
	path     media.Path
	segDur   time.Duration
	segMax   int64
	partDur  time.Duration
	tracks   []*media.Track // carried, in stream order
	byID     []int          // stream track ID -> index in tracks, -1 when not carried
	hasVideo bool
	// wall0 is the wall-clock time of the stream time dts0: a frame's wall
	// time is wall0 + (DTS - dts0), free of the jitter of arrival.
	wall0 time.Time
	dts0  time.Duration

	held    []*media.Frame
	heldDTS []time.Duration // the held frames' DTS as written (shifted)
	lastDur []uint32        // per track, in its timescale
	// Clock-jump repair per track (stream_change.go): the shift applied to
	// its DTS, whether a frame was seen and the last DTS written; jumped
	// asks for a new segment at the next boundary.
	off    []time.Duration
	seen   []bool
	last   []time.Duration
	jumped bool
	// lastKey is the DTS of the latest video keyframe (or plain frame a
	// segment was cut at), for the no-keyframe cut.
	lastKey time.Duration
	// keyDue says the open file has reached its duration and waits for a
	// keyframe to end at; a source that sends keyframes only when asked
	// (a WebRTC publisher) is asked for one.
	keyDue bool
	runs   []fmp4.Run
	// The open part: its frames, the first completed sample's time and
	// the latest end of a completed sample.
	partFrames int
	partStart  time.Duration
	partEnd    time.Duration

	seg *segment
	// onFile receives each finished file; onErr a write error (the
	// instance stops the file and retries at the next keyframe).
	onFile func(FileInfo, error)
	// admit, when set, is asked before each new file (the volume guard)
	// and answers the root the file goes to (the fallback root while the
	// primary is paused); claim learns each new file's id before the file
	// is created.
	admit func() (root string, fallback bool, err error)
	claim func(id string)
}

func newStreamWriter(root string, p media.Path, tracks []*media.Track, segDur time.Duration, segMax int64, partDur time.Duration,
	onFile func(FileInfo, error)) *streamWriter {
	w := &streamWriter{root: root, path: p, segDur: segDur, segMax: segMax, partDur: partDur, onFile: onFile}
	maxID := 0
	for _, t := range tracks {
		maxID = max(maxID, t.ID+1)
	}
	w.byID = make([]int, maxID)
	for i := range w.byID {
		w.byID[i] = -1
	}
	for _, t := range tracks {
		switch t.Codec {
		case media.CodecH264, media.CodecH265, media.CodecVP8, media.CodecAAC, media.CodecOpus, media.CodecPCMA, media.CodecPCMU:
		default:
			continue
		}
		w.byID[t.ID] = len(w.tracks)
		w.tracks = append(w.tracks, t)
		w.hasVideo = w.hasVideo || t.Kind() == media.KindVideo
	}
	w.held = make([]*media.Frame, len(w.tracks))
	w.heldDTS = make([]time.Duration, len(w.tracks))
	w.off = make([]time.Duration, len(w.tracks))
	w.seen = make([]bool, len(w.tracks))
	w.last = make([]time.Duration, len(w.tracks))
	w.lastDur = make([]uint32, len(w.tracks))
	w.runs = make([]fmp4.Run, len(w.tracks))
	for i, t := range w.tracks {
		w.runs[i].Track = t
	}
	return w
}

// carries reports whether the writer records any track.
func (w *streamWriter) carries() bool { return len(w.tracks) > 0 }

// frame records one frame; it returns the bytes written to the files so
// far, for statistics.
func (w *streamWriter) frame(f *media.Frame) error {
	id := f.Track.ID
	if id < 0 || id >= len(w.byID) || w.byID[id] < 0 {
		return nil
	}
	i := w.byID[id]
	video := f.Track.Kind() == media.KindVideo
	key := video && f.Keyframe
	boundary := key || !w.hasVideo
	dts := w.shift(i, f)
	var changed *media.Track
	if key {
		if t, ok := withParameters(w.tracks[i], f); ok {
			changed = t
		}
	}
	if w.seg == nil {
		if !boundary {
			return nil // a file starts at a keyframe; the hub's reader does too
		}
		if w.wall0.IsZero() {
			w.wall0, w.dts0 = time.Now(), dts
		}
		w.setTrack(i, changed)
		w.jumped = false
		if err := w.open(dts); err != nil {
			return err
		}
	} else if reason := w.cutReason(video, key, boundary, changed != nil, dts); reason != "" {
		if reason == ReasonClockJump {
			// The source's clock is not the wall clock's any more: the
			// next file starts now, or where this one ends if later.
			end := w.wall0.Add(dts - w.dts0)
			w.wall0, w.dts0 = time.Now(), dts
			if end.After(w.wall0) {
				w.wall0 = end
			}
		}
		if err := w.closeSegment(dts, video, reason); err != nil {
			return err
		}
		w.setTrack(i, changed)
		w.jumped = false
		if reason == ReasonNoKeyframe {
			w.lastKey = dts
		}
		if err := w.open(dts); err != nil {
			return err
		}
	} else if key {
		w.complete(i, dts)
		if err := w.flushPart(); err != nil {
			return err
		}
	}
	if key {
		w.lastKey = dts
	}
	if video {
		w.keyDue = !key && dts-w.seg.baseDTS >= w.segDur
	}
	if w.held[i] != nil {
		w.complete(i, dts)
	}
	w.held[i], w.heldDTS[i] = f, dts
	if w.partFrames > 0 && w.partEnd-w.partStart >= w.partDur {
		return w.flushPart()
	}
	return nil
}

// cutReason says why the open segment closes at a frame with DTS dts, or
// "" when it goes on.
func (w *streamWriter) cutReason(video, key, boundary, changed bool, dts time.Duration) string {
	long := dts-w.seg.baseDTS >= w.segDur
	switch {
	case changed:
		return ReasonParameters
	case boundary && w.jumped:
		return ReasonClockJump
	case boundary && long:
		return ReasonDuration
	case boundary && w.seg.size >= w.segMax:
		return ReasonSize
	case video && !key && long && dts-w.lastKey >= noKeyframeCut:
		return ReasonNoKeyframe
	}
	return ""
}

// setTrack makes t (when not nil) track i's description from the next
// file on.
func (w *streamWriter) setTrack(i int, t *media.Track) {
	if t != nil {
		w.tracks[i] = t
		w.runs[i].Track = t
	}
}

func (w *streamWriter) open(first time.Duration) error {
	root, fallback := w.root, false
	if w.admit != nil {
		var err error
		if root, fallback, err = w.admit(); err != nil {
			return err
		}
	}
	seg, err := createSegment(root, w.path, w.tracks, first, w.wall0.Add(first-w.dts0), sidxRefs(w.segDur, w.partDur), w.claim)
	if err != nil {
		return err
	}
	seg.fallback = fallback
	w.seg = seg
	return nil
}

// complete moves track i's held frame into the open part, ending at next
// (its successor's DTS).
func (w *streamWriter) complete(i int, next time.Duration) {
	prev := w.held[i]
	if prev == nil {
		return
	}
	w.held[i] = nil
	t := w.tracks[i]
	scale := fmp4.Timescale(t)
	base := fmp4.ToTimescale(w.heldDTS[i], scale)
	end := fmp4.ToTimescale(next, scale)
	dur := uint32(0)
	if end > base {
		dur = uint32(end - base)
	}
	w.lastDur[i] = dur
	w.add(i, prev, w.heldDTS[i], base, dur, next)
}

// completeEstimated moves track i's held frame into the open part with
// the track's last duration: the frame ends a file and its successor goes
// to the next one (or never comes).
func (w *streamWriter) completeEstimated(i int) {
	prev := w.held[i]
	if prev == nil {
		return
	}
	w.held[i] = nil
	t := w.tracks[i]
	scale := fmp4.Timescale(t)
	dur := w.lastDur[i]
	if dur == 0 {
		dur = defaultDuration(t)
	}
	base := fmp4.ToTimescale(w.heldDTS[i], scale)
	w.add(i, prev, w.heldDTS[i], base, dur, w.heldDTS[i]+time.Duration(dur)*time.Second/time.Duration(scale))
}

// defaultDuration is a frame's duration when a track has shown none: 40 ms
// of video, an AAC frame, 20 ms of other audio.
func defaultDuration(t *media.Track) uint32 {
	scale := fmp4.Timescale(t)
	switch {
	case t.Kind() == media.KindVideo:
		return scale / 25
	case t.Codec == media.CodecAAC:
		return 1024
	}
	return scale / 50
}

func (w *streamWriter) add(i int, f *media.Frame, dts time.Duration, base uint64, dur uint32, end time.Duration) {
	r := &w.runs[i]
	if len(r.Samples) == 0 {
		r.BaseTime = base
	}
	r.Samples = append(r.Samples, fmp4.Sample{Frame: f, Duration: dur})
	if w.partFrames == 0 || dts < w.partStart {
		w.partStart = dts
	}
	if w.partFrames == 0 || end > w.partEnd {
		w.partEnd = end
	}
	w.partFrames++
}

// flushPart writes the open part as one fragment.
func (w *streamWriter) flushPart() error {
	if w.partFrames == 0 {
		return nil
	}
	runs := make([]fmp4.Run, 0, len(w.runs))
	key := !w.hasVideo
	for i := range w.runs {
		r := w.runs[i]
		if len(r.Samples) == 0 {
			continue
		}
		if r.Track.Kind() == media.KindVideo {
			key = r.Samples[0].Frame.Keyframe
		}
		runs = append(runs, r)
	}
	err := w.seg.writePart(runs, w.partStart, w.partEnd, key, w.partFrames)
	for i := range w.runs {
		clear(w.runs[i].Samples)
		w.runs[i].Samples = w.runs[i].Samples[:0]
	}
	w.partFrames = 0
	return err
}

// closeSegment finishes the open file. At a video frame (atVideo: a
// keyframe, or a plain frame after too long without one) the held video
// frames end where it starts and that frame goes to the next file;
// otherwise (the stream ended, recording stopped, a segment of audio
// only) every held frame takes its track's last duration.
func (w *streamWriter) closeSegment(next time.Duration, atVideo bool, reason string) error {
	if w.seg == nil {
		return nil
	}
	for i, t := range w.tracks {
		if atVideo && t.Kind() == media.KindVideo {
			w.complete(i, next)
		} else {
			w.completeEstimated(i)
		}
	}
	err := w.flushPart()
	seg := w.seg
	w.seg = nil
	info, ferr := seg.finish(reason)
	if err == nil {
		err = ferr
	}
	w.onFile(info, err)
	return err
}

// written is the open file's size so far.
func (w *streamWriter) written() (id string, size int64, frames uint64) {
	if w.seg == nil {
		return "", 0, 0
	}
	return w.seg.head.FileID, w.seg.size, w.seg.frames
}
