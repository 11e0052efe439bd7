// Package rtsptest provides Relay, a minimal in-memory rtspserver.Handler for
// tests and benchmarks of the RTSP server: a published stream's frames are
// copied to every player's bounded queue, and a player starts at the next
// video keyframe. It stands in for the engine's stream hub, which it does
// not try to be (no GOP cache, no hooks).
package rtsptest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtsp"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtspserver"
)

// Relay is an rtspserver.Handler.
type Relay struct {
	// QueueSize bounds each player's queue (default 4096 frames); a
	// player that falls further behind loses frames, counted in Dropped.
	QueueSize int
	// Refuse, when set, may refuse a request with an error.
	Refuse func(path media.Path, query map[string][]string) error

	mu        sync.Mutex
	streams   map[media.Path]*Stream
	publishes []*rtspserver.PublishRequest
	plays     []*rtspserver.PlayRequest
}

// Stream is one published stream of a Relay.
type Stream struct {
	Tracks []*media.Track
	// Frames and Keyframes count what was published; Dropped what players
	// lost to full queues.
	Frames, Keyframes, Dropped atomic.Int64

	mu      sync.Mutex
	readers map[*source]struct{}
}

// NewRelay returns an empty relay.
func NewRelay() *Relay { return &Relay{streams: map[media.Path]*Stream{}} }

// Stream returns the published stream at p, or nil.
func (r *Relay) Stream(p media.Path) *Stream {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.streams[p]
}

// Publishes and Plays return the requests the server made so far.
func (r *Relay) Publishes() []*rtspserver.PublishRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*rtspserver.PublishRequest(nil), r.publishes...)
}

func (r *Relay) Plays() []*rtspserver.PlayRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*rtspserver.PlayRequest(nil), r.plays...)
}

// Publish implements rtspserver.Handler; a path is published once at a time.
func (r *Relay) Publish(_ context.Context, req *rtspserver.PublishRequest) (rtspserver.FrameWriter, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.publishes = append(r.publishes, req)
	if r.Refuse != nil {
		if err := r.Refuse(req.Path, req.Query); err != nil {
			return nil, err
		}
	}
	if _, ok := r.streams[req.Path]; ok {
		return nil, fmt.Errorf("%w: %s is already published", rtsp.ErrForbidden, req.Path)
	}
	s := &Stream{Tracks: req.Tracks, readers: map[*source]struct{}{}}
	r.streams[req.Path] = s
	return &writer{r: r, path: req.Path, s: s}, nil
}

// Play implements rtspserver.Handler.
func (r *Relay) Play(_ context.Context, req *rtspserver.PlayRequest) (rtspserver.FrameSource, error) {
	r.mu.Lock()
	r.plays = append(r.plays, req)
	s := r.streams[req.Path]
	refuse := r.Refuse
	size := r.QueueSize
	r.mu.Unlock()
	if refuse != nil {
		if err := refuse(req.Path, req.Query); err != nil {
			return nil, err
		}
	}
	if s == nil {
		return nil, fmt.Errorf("%w: %s", rtsp.ErrNotFound, req.Path)
	}
	if size <= 0 {
		size = 4096
	}
	src := &source{s: s, ch: make(chan *media.Frame, size), done: make(chan struct{})}
	s.mu.Lock()
	s.readers[src] = struct{}{}
	s.mu.Unlock()
	return src, nil
}

type writer struct {
	r    *Relay
	path media.Path
	s    *Stream
}

func (w *writer) WriteFrame(f *media.Frame) error {
	w.s.Frames.Add(1)
	if f.Keyframe {
		w.s.Keyframes.Add(1)
	}
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	for src := range w.s.readers {
		if !src.started {
			if f.Track.Kind() != media.KindVideo || !f.Keyframe {
				continue
			}
			src.started = true
		}
		select {
		case src.ch <- f:
		default:
			w.s.Dropped.Add(1)
		}
	}
	return nil
}

func (w *writer) Close() error {
	w.r.mu.Lock()
	delete(w.r.streams, w.path)
	w.r.mu.Unlock()
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	for src := range w.s.readers {
		close(src.done)
	}
	w.s.readers = map[*source]struct{}{}
	return nil
}

type source struct {
	s       *Stream
	ch      chan *media.Frame
	done    chan struct{}
	started bool
}

func (s *source) Tracks() []*media.Track { return s.s.Tracks }

func (s *source) Next(ctx context.Context) (*media.Frame, error) {
	select {
	case f := <-s.ch:
		return f, nil
	case <-s.done:
		return nil, fmt.Errorf("%w: the stream ended", rtsp.ErrClosed)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *source) Close() error {
	s.s.mu.Lock()
	delete(s.s.readers, s)
	s.s.mu.Unlock()
	return nil
}
