package hub

import (
	"context"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/media"
)

// Config shapes a hub.
type Config struct {
	// ReaderQueueFrames bounds each reader's queue (engineapi
	// readerQueueFrames).
	ReaderQueueFrames int
	// GOPCacheMaxFrames bounds the GOP cache (engineapi gopCacheMaxFrames).
	GOPCacheMaxFrames int
	// NoReaderTimeout is how long a ready stream may have no reader before
	// OnNoneReader; 0 never reports.
	NoReaderTimeout time.Duration
	// MergeWindow, when positive, wakes readers at most once per window
	// instead of at every frame, so each writes everything queued in one
	// system call: fewer, larger writes per player at the cost of up to
	// this much latency (engineapi mergeWrite).
	MergeWindow time.Duration
	// OnStreamChanged is called when a stream becomes ready (registered
	// true) and when a ready stream ends (false).
	OnStreamChanged func(s *Stream, registered bool)
	// OnNoneReader is called when a stream has had no reader for
	// NoReaderTimeout.
	OnNoneReader func(s *Stream)
	// ContinueGrace keeps the players of a stream whose publisher ended
	// (a camera reconnecting, a pusher restarting) attached for this long
	// (ZLMediaKit's continue_push_ms): a new publisher of the same path
	// within it continues the stream, its timestamps moved on from where
	// the old ones ended, and readers of formats that can follow a change
	// of publisher (Continuer muxers: HTTP-FLV, HTTP-fMP4) carry on without
	// reconnecting. 0 ends every reader with its stream.
	ContinueGrace time.Duration
}

// Hub holds the live streams.
type Hub struct {
	cfg   Config
	log   *zap.Logger
	epoch time.Time

	mu      sync.Mutex
	streams map[media.Path]*Stream
	// parked holds what streams that lost their publisher left for the
	// next one, by path, for ContinueGrace.
	parked  map[media.Path]*continuation
	changed chan struct{}  // closed and replaced when a stream appears or becomes ready
	loops   sync.WaitGroup // streams' flush loops
	closed  bool
	// draining is set once Close waits for callbacks; later ones run
	// inline instead of racing the wait.
	draining bool
	wg       sync.WaitGroup
	// events holds each path's callbacks not yet run, in order.
	events map[media.Path]*eventQueue

	framesIn, bytesIn, dropped atomic.Uint64
}

// New makes a hub; Close ends it.
func New(cfg Config, log *zap.Logger) *Hub {
	if cfg.ReaderQueueFrames <= 0 {
		cfg.ReaderQueueFrames = 256
	}
	if cfg.GOPCacheMaxFrames <= 0 {
		cfg.GOPCacheMaxFrames = 600
	}
	if cfg.OnStreamChanged == nil {
		cfg.OnStreamChanged = func(*Stream, bool) {}
	}
	if cfg.OnNoneReader == nil {
		cfg.OnNoneReader = func(*Stream) {}
	}
	return &Hub{cfg: cfg, log: log, epoch: time.Now(), streams: map[media.Path]*Stream{}, parked: map[media.Path]*continuation{},
		events:  map[media.Path]*eventQueue{},
		changed: make(chan struct{})}
}

// Key normalises a path: an empty vhost is the default vhost.
func Key(p media.Path) media.Path {
	if p.Vhost == "" {
		p.Vhost = media.DefaultVhost
	}
	return p
}

// Publish opens a stream at path; a second publisher of the same path gets
// ErrAlreadyPublishing. Tracks may still lack parameter sets; the stream
// becomes ready at the first keyframe after they are known.
func (h *Hub) Publish(path media.Path, origin Origin, tracks []*media.Track) (*Publisher, error) {
	if len(tracks) == 0 {
		return nil, ErrNoTracks
	}
	for i, t := range tracks {
		if t.ID != i {
			return nil, ErrUnknownTrack
		}
	}
	path = Key(path)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrHubClosed
	}
	if _, ok := h.streams[path]; ok {
		return nil, ErrAlreadyPublishing
	}
	s := newStream(h, path, origin, tracks)
	if c := h.parked[path]; c != nil {
		delete(h.parked, path)
		c.timer.Stop()
		s.cont = c
	}
	h.streams[path] = s
	if h.cfg.MergeWindow > 0 {
		h.loops.Add(1)
		go func() {
			defer h.loops.Done()
			s.flushLoop(h.cfg.MergeWindow)
		}()
	}
	h.log.Info("stream published", zap.String("stream", path.String()), zap.String("origin", origin.Kind), zap.Int("tracks", len(tracks)))
	return &Publisher{s: s}, nil
}

// Subscribe adds a reader of the stream at path in format (nil for raw
// frames), waiting until the stream exists and is ready or ctx ends; the
// label names the reader in logs. A stream that never appears gives
// ErrStreamNotFound when ctx ends.
func (h *Hub) Subscribe(ctx context.Context, path media.Path, format Format, label string) (*Reader, error) {
	return h.subscribe(ctx, path, format, label, false)
}

// SubscribeDrain adds a raw reader like Subscribe, whose queued frames
// survive the end of the stream: Next hands them out before it fails with
// ErrStreamClosed. A recorder uses it so that a file ends with the
// stream's last frame rather than a queue's worth before it.
func (h *Hub) SubscribeDrain(ctx context.Context, path media.Path, label string) (*Reader, error) {
	return h.subscribe(ctx, path, nil, label, true)
}

func (h *Hub) subscribe(ctx context.Context, path media.Path, format Format, label string, drain bool) (*Reader, error) {
	path = Key(path)
	for {
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return nil, ErrHubClosed
		}
		s := h.streams[path]
		changed := h.changed
		h.mu.Unlock()
		if s != nil {
			select {
			case <-s.readyCh:
				r, err := s.subscribe(format, label, drain)
				if errors.Is(err, ErrStreamClosed) {
					continue // replaced by a new publisher meanwhile, or gone
				}
				if err == nil && r.waitsForKeyframe() {
					// The GOP cache did not fit its queue: a source that can
					// make a keyframe on demand spares it the wait.
					s.RequestKeyframe()
				}
				return r, err
			default:
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ErrStreamNotFound
		}
	}
}

// Stream returns the live stream at path.
func (h *Hub) Stream(path media.Path) (*Stream, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.streams[Key(path)]
	return s, ok
}

// Streams lists the streams, ordered by path.
func (h *Hub) Streams() []*Stream {
	h.mu.Lock()
	out := make([]*Stream, 0, len(h.streams))
	for _, s := range h.streams {
		out = append(out, s)
	}
	h.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].path.String() < out[j].path.String() })
	return out
}

// Totals are the hub's counters since start.
func (h *Hub) Totals() (framesIn, bytesIn, dropped uint64) {
	return h.framesIn.Load(), h.bytesIn.Load(), h.dropped.Load()
}

// Now is the hub's monotonic clock, in the unit of Packet.Arrived.
func (h *Hub) Now() int64 { return int64(time.Since(h.epoch)) }

// Since converts a Packet's Arrived stamp to the time elapsed since.
func (h *Hub) Since(arrived int64) time.Duration {
	return time.Since(h.epoch) - time.Duration(arrived)
}

// Close ends every stream and waits for the event callbacks in flight.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	streams := make([]*Stream, 0, len(h.streams))
	for _, s := range h.streams {
		streams = append(streams, s)
	}
	h.mu.Unlock()
	for _, s := range streams {
		s.Close()
	}
	h.mu.Lock()
	parked := h.parked
	h.parked = map[media.Path]*continuation{}
	h.draining = true
	h.mu.Unlock()
	for _, c := range parked {
		c.timer.Stop()
		c.fail()
	}
	h.wg.Wait()
	h.loops.Wait()
}

func (h *Hub) remove(s *Stream) {
	h.mu.Lock()
	if h.streams[s.path] == s {
		delete(h.streams, s.path)
	}
	h.mu.Unlock()
}

func (h *Hub) notify() {
	h.mu.Lock()
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
}

// async runs an event callback off the hot path; Close waits for it.
// Callbacks of one path run one after another in the order they were
// raised: a stream's "unregistered" must never reach the control plane
// after the "registered" of the publisher that replaced it.
func (h *Hub) async(path media.Path, fn func()) {
	h.mu.Lock()
	if q := h.events[path]; q != nil {
		q.pending = append(q.pending, fn)
		h.mu.Unlock()
		return
	}
	if h.draining {
		h.mu.Unlock()
		fn()
		return
	}
	q := &eventQueue{pending: []func(){fn}}
	h.events[path] = q
	h.wg.Add(1)
	h.mu.Unlock()
	go func() {
		defer h.wg.Done()
		for {
			h.mu.Lock()
			if len(q.pending) == 0 {
				delete(h.events, path)
				h.mu.Unlock()
				return
			}
			next := q.pending[0]
			q.pending = q.pending[1:]
			h.mu.Unlock()
			next()
		}
	}()
}

// eventQueue holds the callbacks of one path waiting for its runner.
type eventQueue struct{ pending []func() }
