package rtsp

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/svcplatform/svc/mediaengine/media"
)

// relay is the tests' minimal stand-in for the stream hub: a published
// stream's frames are copied to every player's queue, and a player starts
// at the next keyframe. It is a real Handler, exercised through the
// server like the engine's will be.
type relay struct {
	mu      sync.Mutex
	streams map[media.Path]*relayStream
	// publishes and plays record the requests the server made.
	publishes []*PublishRequest
	plays     []*PlayRequest
	// refuse, when set, decides whether to refuse a request.
	refuse func(path media.Path, query map[string][]string) error
}

type relayStream struct {
	tracks  []*media.Track
	mu      sync.Mutex
	readers map[*relaySource]struct{}
	frames  atomic.Int64
	keys    atomic.Int64
	closed  bool
}

func newRelay() *relay { return &relay{streams: map[media.Path]*relayStream{}} }

func (r *relay) stream(p media.Path) *relayStream {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.streams[p]
}

func (r *relay) Publish(_ context.Context, req *PublishRequest) (FrameWriter, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.publishes = append(r.publishes, req)
	if r.refuse != nil {
		if err := r.refuse(req.Path, req.Query); err != nil {
			return nil, err
		}
	}
	if _, ok := r.streams[req.Path]; ok {
		return nil, fmt.Errorf("%w: %s is already published", ErrForbidden, req.Path)
	}
	s := &relayStream{tracks: req.Tracks, readers: map[*relaySource]struct{}{}}
	r.streams[req.Path] = s
	return &relayWriter{r: r, path: req.Path, s: s}, nil
}

func (r *relay) Play(_ context.Context, req *PlayRequest) (FrameSource, error) {
	r.mu.Lock()
	r.plays = append(r.plays, req)
	s := r.streams[req.Path]
	refuse := r.refuse
	r.mu.Unlock()
	if refuse != nil {
		if err := refuse(req.Path, req.Query); err != nil {
			return nil, err
		}
	}
	if s == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, req.Path)
	}
	src := &relaySource{s: s, ch: make(chan *media.Frame, 4096), done: make(chan struct{})}
	s.mu.Lock()
	s.readers[src] = struct{}{}
	s.mu.Unlock()
	return src, nil
}

type relayWriter struct {
	r    *relay
	path media.Path
	s    *relayStream
}

func (w *relayWriter) WriteFrame(f *media.Frame) error {
	w.s.frames.Add(1)
	if f.Keyframe {
		w.s.keys.Add(1)
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
			src.dropped.Add(1)
		}
	}
	return nil
}

func (w *relayWriter) Close() error {
	w.r.mu.Lock()
	delete(w.r.streams, w.path)
	w.r.mu.Unlock()
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	w.s.closed = true
	for src := range w.s.readers {
		close(src.done)
	}
	w.s.readers = map[*relaySource]struct{}{}
	return nil
}

type relaySource struct {
	s       *relayStream
	ch      chan *media.Frame
	done    chan struct{}
	started bool
	dropped atomic.Int64
}

func (s *relaySource) Tracks() []*media.Track { return s.s.tracks }

func (s *relaySource) Next(ctx context.Context) (*media.Frame, error) {
	select {
	case f := <-s.ch:
		return f, nil
	case <-s.done:
		return nil, fmt.Errorf("stream ended")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *relaySource) Close() error {
	s.s.mu.Lock()
	delete(s.s.readers, s)
	s.s.mu.Unlock()
	return nil
}
