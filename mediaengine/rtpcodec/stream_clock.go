package rtpcodec

import (
	"sync"
	"time"
)

// StreamClock is the time origin shared by the tracks of one stream. Every
// track's Timeline reports positions as offsets from it, so a video frame
// and an audio frame that were captured together carry (about) the same
// PTS.
//
// A track is placed on the origin when its first packet arrives: by the
// sender's RTCP sender report when one has arrived by then (exact lip sync:
// the SR ties the track's RTP clock to the sender's wall clock, the same
// for all its tracks), else by the packet's arrival time (good to the
// network jitter of the first packets). The first SR of the stream fixes
// the offset between the sender's wall clock and ours, so tracks placed
// either way share one time base.
//
// It is safe for concurrent use: with UDP each track is read by its own
// goroutine.
type StreamClock struct {
	mu        sync.Mutex
	origin    time.Time
	hasOrigin bool
	// senderOffset is the sender's NTP time minus our arrival time, taken
	// from the first sender report of any track.
	senderOffset time.Duration
	hasSender    bool
}

// NewStreamClock returns a clock whose origin is set by the first track
// that asks.
func NewStreamClock() *StreamClock { return &StreamClock{} }

// since returns local's offset from the origin, fixing the origin at local
// when it is the first instant asked about.
func (c *StreamClock) since(local time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.hasOrigin {
		c.origin = local
		c.hasOrigin = true
	}
	return local.Sub(c.origin)
}

// senderReport records the sender-to-local offset from the stream's first
// sender report.
func (c *StreamClock) senderReport(ntp, arrival time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.hasSender {
		c.senderOffset = ntp.Sub(arrival)
		c.hasSender = true
	}
}

// local converts a sender wall-clock instant into our time base.
func (c *StreamClock) local(ntp time.Time) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.hasSender {
		return time.Time{}, false
	}
	return ntp.Add(-c.senderOffset), true
}
