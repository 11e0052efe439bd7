package hub

import (
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/media"
)

// Continuer is implemented by muxers whose readers can follow a stream
// across a change of publisher (a camera that reconnected): the muxer of
// the new publisher's tracks says what a reader of the old stream needs
// before its first frame.
type Continuer interface {
	// Continue returns the bytes a reader that got the old stream (tracks
	// prev) needs before this muxer's first frame, whose DTS is at: nothing
	// when the tracks are the same, new decoder configuration when only
	// their parameters changed, a whole new header when the codecs or the
	// set of tracks changed, as players expect.
	Continue(prev []*media.Track, at time.Duration) []byte
}

// continuation is what a stream that lost its publisher leaves for the
// next publisher of its path: the readers waiting to carry on and where
// its timeline ended.
type continuation struct {
	tracks  []*media.Track
	lastDTS time.Duration
	// step is the gap left after lastDTS: the old stream's last video frame
	// interval (one frame, so players see no pause in the timestamps).
	step    time.Duration
	readers []*Reader
	timer   *time.Timer
}

// defaultStep is the gap after the old timeline when the frame interval
// is not known (audio only, or a single frame).
const defaultStep = 40 * time.Millisecond

// fail ends the waiting readers: no publisher came in time.
func (c *continuation) fail() {
	for _, r := range c.readers {
		r.fail(ErrStreamClosed)
	}
}

// park keeps c for the next publisher of path until ContinueGrace passes.
func (h *Hub) park(path media.Path, c *continuation) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		c.fail()
		return
	}
	if old := h.parked[path]; old != nil {
		old.timer.Stop()
		old.fail()
	}
	h.parked[path] = c
	c.timer = time.AfterFunc(h.cfg.ContinueGrace, func() {
		h.mu.Lock()
		expired := h.parked[path] == c
		if expired {
			delete(h.parked, path)
		}
		h.mu.Unlock()
		if expired {
			h.log.Info("no publisher came back; ending the waiting players", zap.String("stream", path.String()),
				zap.Int("players", len(c.readers)), zap.Duration("grace", h.cfg.ContinueGrace))
			c.fail()
		}
	})
}

// continueTimeline moves a frame of a publisher that continues an earlier
// one, so that its timestamps go on from where the earlier ones ended; the
// move is decided at the publisher's first frame. Called under s.mu. The
// moved frame is a copy: the publisher may share f with others.
func (s *Stream) continueTimeline(f *media.Frame) *media.Frame {
	if !s.shiftSet {
		s.shiftSet = true
		if c := s.cont; c != nil {
			step := c.step
			if step <= 0 || step > time.Second {
				step = defaultStep
			}
			if d := c.lastDTS + step - f.DTS; d > 0 {
				s.shift = d
			}
		}
	}
	if s.shift != 0 {
		g := *f
		g.PTS += s.shift
		g.DTS += s.shift
		f = &g
	}
	if f.DTS > s.lastDTS {
		s.lastDTS = f.DTS
	}
	if f.Track.Kind() == media.KindVideo {
		if d := f.DTS - s.lastVideoDTS; d > 0 && s.lastVideoDTS != 0 {
			s.lastStep = d
		}
		s.lastVideoDTS = f.DTS
	}
	return f
}

// adoptParked moves the readers the path's previous publisher left into
// this stream as it becomes ready with first (a keyframe): each gets, in its
// format, what it needs to follow the change, then this stream's frames.
// Called under s.mu.
func (s *Stream) adoptParked(first *media.Frame) {
	c := s.cont
	s.cont = nil
	if c == nil {
		return
	}
	kept := 0
	for _, r := range c.readers {
		if r.Err() != nil {
			continue // the player left while it waited
		}
		fd, err := s.feedOf(r.format)
		if err != nil {
			r.fail(err)
			continue
		}
		var header []byte
		if ct, ok := fd.muxer.(Continuer); ok {
			header = ct.Continue(c.tracks, first.DTS)
		}
		if !r.adopt(s, fd, header) {
			continue
		}
		kept++
	}
	if kept > 0 {
		s.hub.log.Info("players carried over to the new publisher", zap.String("stream", s.path.String()), zap.Int("players", kept))
	}
}
