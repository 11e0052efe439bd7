package gbrtp

import (
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
)

// maxHeldFrames bounds the frames held while a stream waits to be
// published (a GOP and its audio at 25 fps with a 4 s GOP fit).
const maxHeldFrames = 512

// publishGate holds frames until the stream can be published: a video
// keyframe whose track is described, and every other track described or
// readyWait passed since that keyframe (a track still undescribed then is
// left out). An audio-only stream is published readyWait after its first
// described frame.
type publishGate struct {
	readyWait time.Duration
	held      []*media.Frame
	since     time.Time // first keyframe (or first audio frame) held
	keyframe  bool
}

// add holds f; it reports whether the stream is ready to publish with the
// tracks known so far.
func (g *publishGate) add(f *media.Frame, tracks []*media.Track, now time.Time) bool {
	t := f.Track
	if t.Kind() == media.KindVideo {
		if f.Keyframe && t.Ready() && !g.keyframe {
			g.keyframe, g.since, g.held = true, now, g.held[:0]
		}
		if !g.keyframe {
			return false // nothing before the first keyframe is worth holding
		}
	} else if !g.keyframe && hasVideo(tracks) {
		return false
	} else if g.since.IsZero() && t.Ready() {
		g.since = now
	}
	if len(g.held) == maxHeldFrames {
		g.held, g.keyframe, g.since = g.held[:0], false, time.Time{}
		return false
	}
	g.held = append(g.held, f)
	if g.since.IsZero() {
		return false
	}
	if now.Sub(g.since) >= g.readyWait {
		return true
	}
	if !g.keyframe {
		return false
	}
	for _, tr := range tracks {
		if !tr.Ready() {
			return false
		}
	}
	return true
}

// tracks returns the tracks to publish, video first, renumbered in order.
func (g *publishGate) tracks(all []*media.Track) []*media.Track {
	var out []*media.Track
	for _, kind := range []media.Kind{media.KindVideo, media.KindAudio} {
		for _, t := range all {
			if t.Ready() && t.Kind() == kind {
				t.ID = len(out)
				out = append(out, t)
			}
		}
	}
	return out
}

func hasVideo(tracks []*media.Track) bool {
	for _, t := range tracks {
		if t.Kind() == media.KindVideo {
			return true
		}
	}
	return false
}
