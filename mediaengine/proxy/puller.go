package proxy

import (
	"context"

	"github.com/svcplatform/svc/mediaengine/media"
)

// FrameWriter takes a pulled stream's frames; *hub.Publisher is one.
type FrameWriter interface {
	WriteFrame(f *media.Frame) error
}

// Source says what to pull.
type Source struct {
	URL string
	// Transport is "tcp", "udp" or "" (automatic) for RTSP.
	Transport string
	// AllowBasicAuth lets an RTSP source's Basic challenge be answered.
	AllowBasicAuth bool
}

// Puller runs one pull session: it connects to the source, calls publish
// once with the tracks it found, writes every frame to the writer publish
// returned, and returns when the source ends or fails, publish or a write
// fails, or ctx ends. The registry handles reconnecting, so a Puller makes
// one attempt.
type Puller interface {
	Pull(ctx context.Context, src Source, publish func(tracks []*media.Track) (FrameWriter, error)) error
}

// PullerFunc adapts a function to Puller.
type PullerFunc func(ctx context.Context, src Source, publish func(tracks []*media.Track) (FrameWriter, error)) error

// Pull implements Puller.
func (f PullerFunc) Pull(ctx context.Context, src Source, publish func(tracks []*media.Track) (FrameWriter, error)) error {
	return f(ctx, src, publish)
}
