package hub

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/media"
)

// Reader is one subscriber of a stream in one format: an output connection,
// an HLS segmenter, an RTSP player. Its queue is bounded; when it is full
// the reader drops frames until the next keyframe instead of slowing the
// publisher.
type Reader struct {
	// stream changes when the reader follows its path to a new publisher
	// (ContinueGrace); feed and idx change with it, under that stream's mu.
	stream atomic.Pointer[Stream]
	feed   *feed
	idx    int // position in feed.readers, guarded by stream.mu
	format Format
	label  string
	header []byte
	// merged readers are woken by the stream's flush loop, not by push.
	merged bool
	// drain keeps what is queued when the stream ends, so Next hands it
	// out before ErrStreamClosed (SubscribeDrain: a recorder must not lose
	// a stream's last frames).
	drain bool

	mu      sync.Mutex
	ring    []*Packet
	head, n int
	needKey bool
	err     error
	wake    chan struct{}
	// notify, when set, replaces the wake channel: outputs that write many
	// readers from a few goroutines are told which reader has packets.
	notify func()
	// batch and batchSpan (SetBatch): push leaves Next asleep until batch
	// packets are queued, a keyframe is, or the queue spans batchSpan
	// (Arrived units) from its first packet.
	batch     int
	batchSpan int64

	frames  atomic.Uint64
	dropped atomic.Uint64
}

func newReader(s *Stream, f *feed, format Format, label string, queue int) *Reader {
	r := &Reader{feed: f, format: format, label: label, header: f.header, ring: make([]*Packet, queue), wake: make(chan struct{}, 1),
		merged: s.hub.cfg.MergeWindow > 0}
	r.stream.Store(s)
	return r
}

// Stream is the stream the reader reads: after its publisher changed
// within the hub's ContinueGrace, the new one.
func (r *Reader) Stream() *Stream { return r.stream.Load() }

// Tracks are the stream's tracks, complete (Ready) by the time a reader
// exists.
func (r *Reader) Tracks() []*media.Track { return r.Stream().Tracks() }

// Header is the format's header (nil for the raw feed), to be written
// before the first packet.
func (r *Reader) Header() []byte { return r.header }

// Frames is the number of packets handed out by Next.
func (r *Reader) Frames() uint64 { return r.frames.Load() }

// Dropped is the number of frames the reader lost by falling behind.
func (r *Reader) Dropped() uint64 { return r.dropped.Load() }

// push queues p; the publisher calls it under the stream's lock.
func (r *Reader) push(p *Packet) {
	r.mu.Lock()
	if r.err != nil {
		r.mu.Unlock()
		return
	}
	if r.needKey {
		if !p.Keyframe || r.n == len(r.ring) {
			r.mu.Unlock()
			r.drop()
			return
		}
		r.needKey = false
	}
	if r.n == len(r.ring) {
		// Whatever is queued still decodes; after it the reader resumes at
		// the next keyframe.
		r.needKey = true
		r.mu.Unlock()
		if r.drop() == 1 || r.dropped.Load()%1000 == 1 {
			s := r.Stream()
			s.hub.log.Warn("slow reader drops frames until the next keyframe", zap.String("stream", s.path.String()),
				zap.String("reader", r.label), zap.Uint64("dropped", r.dropped.Load()))
		}
		return
	}
	r.ring[(r.head+r.n)%len(r.ring)] = p
	r.n++
	notify := r.notify
	hold := r.batch > 1 && r.n < r.batch && !p.Keyframe && p.Arrived-r.ring[r.head].Arrived < r.batchSpan
	r.mu.Unlock()
	if r.merged || hold {
		return
	}
	r.signal(notify)
}

// SetBatch lets a reader that need not see every frame at once (a
// recorder, which writes a part a second) be woken less often: Next waits
// until frames packets are queued (at most half the queue, so batching
// never makes it drop), a keyframe is, or the queued packets span span
// from the first one's arrival. Waking a reader goroutine per frame is a
// good part of what a recording costs. A stream that stalls keeps fewer
// than frames packets, arrived within span, from Next until it resumes or
// ends (its end wakes Next as always).
func (r *Reader) SetBatch(frames int, span time.Duration) {
	r.mu.Lock()
	r.batch, r.batchSpan = min(frames, len(r.ring)/2), int64(span)
	r.mu.Unlock()
}

func (r *Reader) signal(notify func()) {
	if notify != nil {
		notify()
		return
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// SetNotify makes the reader call fn, instead of waking Next, whenever it
// has packets or is closed; fn must not block. If packets are already
// queued (the GOP cache), fn is called at once.
func (r *Reader) SetNotify(fn func()) {
	r.mu.Lock()
	r.notify = fn
	pending := r.n > 0 || r.err != nil
	r.mu.Unlock()
	if pending {
		fn()
	}
}

// Err is the reason the reader was closed, nil while it is open.
func (r *Reader) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// TryNext appends every queued packet to dst without waiting; it fails
// once the reader or its stream is closed.
func (r *Reader) TryNext(dst []*Packet) ([]*Packet, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return dst, r.err
	}
	for i := 0; i < r.n; i++ {
		j := (r.head + i) % len(r.ring)
		dst = append(dst, r.ring[j])
		r.ring[j] = nil
	}
	r.frames.Add(uint64(r.n))
	r.head, r.n = 0, 0
	return dst, nil
}

// flush wakes the reader if it has packets; the flush loop calls it.
func (r *Reader) flush() {
	r.mu.Lock()
	pending := r.n > 0
	notify := r.notify
	r.mu.Unlock()
	if pending {
		r.signal(notify)
	}
}

func (r *Reader) drop() uint64 {
	r.Stream().hub.dropped.Add(1)
	return r.dropped.Add(1)
}

// seed queues the GOP cache for a new reader, or makes it wait for the next
// keyframe when the cache does not fit its queue. Called under the
// stream's lock before the reader is visible to the publisher.
func (r *Reader) seed(gop []*Packet) {
	if len(gop) == 0 || len(gop) > len(r.ring) {
		r.needKey = true
		return
	}
	copy(r.ring, gop)
	r.n = len(gop)
	r.wake <- struct{}{} // a notify set later is called at once for these
}

// waitsForKeyframe reports whether the reader is waiting for the next
// keyframe before it gets any packet.
func (r *Reader) waitsForKeyframe() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.needKey && r.n == 0
}

// Next appends every queued packet to dst, waiting until there is at least
// one. It fails with ErrReaderClosed or ErrStreamClosed once the reader or
// its stream is closed, and with ctx's error when ctx ends. Reusing dst
// across calls keeps the read path free of allocations.
func (r *Reader) Next(ctx context.Context, dst []*Packet) ([]*Packet, error) {
	for {
		r.mu.Lock()
		if r.err != nil && r.n == 0 {
			err := r.err
			r.mu.Unlock()
			return dst, err
		}
		if r.n > 0 {
			for i := 0; i < r.n; i++ {
				j := (r.head + i) % len(r.ring)
				dst = append(dst, r.ring[j])
				r.ring[j] = nil
			}
			r.frames.Add(uint64(r.n))
			r.head, r.n = 0, 0
			r.mu.Unlock()
			return dst, nil
		}
		r.mu.Unlock()
		if done := ctx.Done(); done == nil {
			// A plain receive costs a fraction of a select; writers that
			// end readers by closing them pass a context that never ends.
			<-r.wake
		} else {
			select {
			case <-r.wake:
			case <-done:
				return dst, ctx.Err()
			}
		}
	}
}

// Close unsubscribes the reader; a Next in progress returns
// ErrReaderClosed. Closing twice is harmless.
func (r *Reader) Close() {
	r.fail(ErrReaderClosed)
	// A reader that follows its path to a new publisher moves under that
	// stream's lock after its error check, so once failed it moves no more.
	r.Stream().removeReader(r)
}

// adopt moves a reader waiting for its path's next publisher into s's feed
// fd, with header (what it needs to follow the change) queued before s's
// frames; called under s.mu. It answers false for a reader that closed
// meanwhile, or whose queue cannot take the header (it is ended: without
// the header it could not decode what follows).
func (r *Reader) adopt(s *Stream, fd *feed, header []byte) bool {
	r.mu.Lock()
	if r.err != nil {
		r.mu.Unlock()
		return false
	}
	if len(header) > 0 {
		if r.n == len(r.ring) {
			r.mu.Unlock()
			r.fail(ErrStreamClosed)
			return false
		}
		r.ring[(r.head+r.n)%len(r.ring)] = &Packet{Data: header, Keyframe: true, Arrived: s.hub.Now()}
		r.n++
	}
	r.stream.Store(s)
	r.feed = fd
	r.idx = len(fd.readers)
	fd.readers = append(fd.readers, r)
	s.readers++
	notify := r.notify
	r.mu.Unlock()
	if len(header) > 0 && !r.merged {
		r.signal(notify)
	}
	return true
}

func (r *Reader) fail(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
		if !r.drain || !errors.Is(err, ErrStreamClosed) {
			clear(r.ring)
			r.n = 0
		}
	}
	notify := r.notify
	r.mu.Unlock()
	r.signal(notify)
}
