package rtpcodec

import "time"

// audioClock keeps an audio track's timestamps strictly increasing, as
// media.Frame promises. Audio has no reordering, so a frame that would go
// back in time is a replayed or misnumbered packet: it is dropped rather
// than shuffled into place.
type audioClock struct {
	last    time.Duration
	started bool
}

// admit reports whether a frame at pts may be published.
func (c *audioClock) admit(pts time.Duration) bool {
	if c.started && pts <= c.last {
		return false
	}
	c.last, c.started = pts, true
	return true
}
