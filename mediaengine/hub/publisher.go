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

// OnKeyframeRequest registers fn to be called when a reader asks for a
// keyframe (a WebRTC viewer joined or lost a picture): a source that can
// produce one on demand (a WHIP publisher sending PLI upstream) sets it;
// others cannot and leave it unset. fn must not block.
func (p *Publisher) OnKeyframeRequest(fn func()) { p.s.keyframeReq.Store(&fn) }

// Close ends the stream because its source ended. Readers that can follow
// a change of publisher wait up to the hub's ContinueGrace for the next
// publisher of the path; to end the stream for everyone at once (the
// stream was stopped on purpose), close Stream() instead.
func (p *Publisher) Close() { p.s.end(true) }
