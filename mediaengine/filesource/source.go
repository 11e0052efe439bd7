package filesource

import (
	"context"
	"errors"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
)

// FrameWriter takes the frames of a live stream; *hub.Publisher is one.
type FrameWriter interface {
	WriteFrame(f *media.Frame) error
}

// Play writes the clip's frames to w in real time, looping until ctx ends
// or loops (0 = forever) are done. Timestamps continue across loops by the
// clip's Duration, so a player sees one uninterrupted live stream. Each
// loop publishes fresh Frame values sharing the clip's payload bytes,
// because published frames are immutable.
func Play(ctx context.Context, c *Clip, w FrameWriter, loops int) error {
	start := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for loop := 0; loops == 0 || loop < loops; loop++ {
		offset := time.Duration(loop) * c.Duration
		for _, f := range c.Frames {
			due := offset + f.DTS
			if wait := time.Until(start.Add(due)); wait > time.Millisecond {
				timer.Reset(wait)
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-timer.C:
				}
			} else if ctx.Err() != nil {
				return ctx.Err()
			}
			out := *f
			out.PTS += offset
			out.DTS += offset
			if err := w.WriteFrame(&out); err != nil {
				return err
			}
		}
	}
	return nil
}

// ErrEnded is returned by a finite source when its loops are done.
var ErrEnded = errors.New("filesource: the file ended")
