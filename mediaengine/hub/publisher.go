package hub

import "github.com/svcplatform/svc/mediaengine/media"

// Publisher is the one writer of a stream. Inputs (RTSP pull and push, the
// file source) hold one while they deliver frames.
type Publisher struct {
	s *Stream
}

// Stream is the published stream.
func (p *Publisher) Stream() *Stream { return p.s }

// Done is closed when the stream is closed, by the publisher or from
// outside (the control API); the input should stop then.
func (p *Publisher) Done() <-chan struct{} { return p.s.done }

// WriteFrame hands one frame to every reader. f.Track must be one of the
// tracks the stream was published with, and f must not change afterwards.
// Frames before the stream can start (parameter sets missing, no keyframe
// yet) are counted and dropped. It fails with ErrStreamClosed once the
// stream was closed.
func (p *Publisher) WriteFrame(f *media.Frame) error { return p.s.write(f) }

// Close ends the stream.
func (p *Publisher) Close() { p.s.Close() }
