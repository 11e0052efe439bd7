package hub

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/codec/h264"
	"github.com/svcplatform/svc/mediaengine/codec/h265"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/shared/engineapi"
)

// Stream is one live stream: its tracks, its publisher and its feeds.
type Stream struct {
	hub       *Hub
	path      media.Path
	origin    Origin
	startedAt time.Time
	readyCh   chan struct{}
	done      chan struct{}

	mu       sync.Mutex
	tracks   []*media.Track
	hasVideo bool
	ready    bool
	closed   bool
	raw      *feed
	feeds    []*feed // format feeds with at least one reader
	readers  int
	idle     *time.Timer
	stats    []trackStats

	// cont is what the path's previous publisher left: its waiting readers
	// join this stream when it becomes ready. shift moves every frame of
	// this publisher so its timeline continues the previous one's; it is
	// decided at the first frame (shiftSet).
	cont     *continuation
	shift    time.Duration
	shiftSet bool
	// lastDTS is the latest DTS written (shifted), lastStep the latest
	// video frame interval: where a next publisher continues from.
	lastDTS, lastVideoDTS, lastStep time.Duration

	// keyframeReq asks the publisher for a keyframe (Publisher.
	// OnKeyframeRequest); nil for sources that cannot make one.
	keyframeReq atomic.Pointer[func()]
}

// RequestKeyframe asks the stream's source for a keyframe, and reports
// whether it can make one on demand; a camera pulled over RTSP cannot, and
// its readers wait for the next keyframe of its GOP.
func (s *Stream) RequestKeyframe() bool {
	fn := s.keyframeReq.Load()
	if fn == nil {
		return false
	}
	(*fn)()
	return true
}

func newStream(h *Hub, path media.Path, origin Origin, tracks []*media.Track) *Stream {
	s := &Stream{hub: h, path: path, origin: origin, startedAt: time.Now(), readyCh: make(chan struct{}), done: make(chan struct{}),
		tracks: tracks, raw: &feed{}, stats: make([]trackStats, len(tracks))}
	for _, t := range tracks {
		if t.Kind() == media.KindVideo {
			s.hasVideo = true
		}
	}
	return s
}

// Path is the stream's path.
func (s *Stream) Path() media.Path { return s.path }

// Origin says where the stream comes from.
func (s *Stream) Origin() Origin { return s.origin }

// Tracks returns the stream's tracks.
func (s *Stream) Tracks() []*media.Track { return s.tracks }

// Ready is closed once every track is complete and a reader can start.
func (s *Stream) Ready() <-chan struct{} { return s.readyCh }

// IsReady says whether the stream has become ready (and not ended).
func (s *Stream) IsReady() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ready && !s.closed
}

// Done is closed when the stream ends.
func (s *Stream) Done() <-chan struct{} { return s.done }

// Readers is the number of readers.
func (s *Stream) Readers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readers
}

// write fans f out; see Publisher.WriteFrame.
func (s *Stream) write(f *media.Frame) error {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrStreamClosed
	}
	if f.Track == nil || f.Track.ID < 0 || f.Track.ID >= len(s.tracks) || s.tracks[f.Track.ID] != f.Track {
		return ErrUnknownTrack
	}
	f = s.continueTimeline(f)
	size := f.Size()
	s.stats[f.Track.ID].add(f.DTS, size)
	s.hub.framesIn.Add(1)
	s.hub.bytesIn.Add(uint64(size))
	isVideo := f.Track.Kind() == media.KindVideo
	if isVideo && f.Keyframe && f.Track.Width == 0 {
		fillSize(f.Track)
	}
	if !s.ready {
		if !s.canStart(f) {
			return nil
		}
		s.becomeReady(f)
	}
	key := f.Keyframe && isVideo || !s.hasVideo
	raw := &Packet{Frame: f, Keyframe: key, Arrived: int64(now.Sub(s.hub.epoch))}
	s.fanOut(s.raw, raw)
	for _, fd := range s.feeds {
		p, ok := fd.muxer.Frame(f)
		if !ok {
			continue
		}
		p.Frame, p.Arrived = f, raw.Arrived
		s.fanOut(fd, &p)
	}
	return nil
}

func (s *Stream) fanOut(fd *feed, p *Packet) {
	fd.cache(p, s.hub.cfg.GOPCacheMaxFrames)
	for _, r := range fd.readers {
		r.push(p)
	}
}

// canStart reports whether the stream can start with f: every track has
// its parameter sets, and f is a video keyframe (or the stream has no
// video). Frames before that are useless to any reader.
func (s *Stream) canStart(f *media.Frame) bool {
	for _, t := range s.tracks {
		if !t.Ready() {
			return false
		}
	}
	return !s.hasVideo || (f.Keyframe && f.Track.Kind() == media.KindVideo)
}

func (s *Stream) becomeReady(first *media.Frame) {
	s.ready = true
	for _, t := range s.tracks {
		if t.Kind() == media.KindVideo && t.Width == 0 {
			fillSize(t)
		}
	}
	s.adoptParked(first)
	close(s.readyCh)
	s.hub.notify()
	s.armIdle()
	s.hub.async(s.path, func() { s.hub.cfg.OnStreamChanged(s, true) })
}

// fillSize takes a video track's coded size from its SPS when the input
// did not know it.
func fillSize(t *media.Track) {
	switch t.Codec {
	case media.CodecH264:
		if sps, err := h264.ParseSPS(t.SPS); err == nil {
			t.Width, t.Height = sps.Width, sps.Height
		}
	case media.CodecH265:
		if sps, err := h265.ParseSPS(t.SPS); err == nil {
			t.Width, t.Height = sps.Width, sps.Height
		}
	}
}

// subscribe adds a reader of format (nil for raw frames).
func (s *Stream) subscribe(format Format, label string, drain bool) (*Reader, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrStreamClosed
	}
	fd := s.raw
	if format != nil {
		var err error
		if fd, err = s.feedOf(format); err != nil {
			return nil, err
		}
	}
	r := newReader(s, fd, format, label, s.hub.cfg.ReaderQueueFrames)
	r.drain = drain
	r.seed(fd.gop)
	r.idx = len(fd.readers)
	fd.readers = append(fd.readers, r)
	s.readers++
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	return r, nil
}

// feedOf returns the stream's feed of format, made (and brought up to date
// from the raw GOP cache) on first use; called under s.mu.
func (s *Stream) feedOf(format Format) (*feed, error) {
	if fd := s.formatFeed(format.Name()); fd != nil {
		return fd, nil
	}
	m, err := format.NewMuxer(s.tracks)
	if err != nil {
		return nil, err
	}
	fd := &feed{name: format.Name(), muxer: m, header: m.Header()}
	for _, rp := range s.raw.gop {
		if p, ok := m.Frame(rp.Frame); ok {
			p.Frame, p.Arrived = rp.Frame, rp.Arrived
			fd.cache(&p, s.hub.cfg.GOPCacheMaxFrames)
		}
	}
	s.feeds = append(s.feeds, fd)
	return fd, nil
}

func (s *Stream) formatFeed(name string) *feed {
	for _, fd := range s.feeds {
		if fd.name == name {
			return fd
		}
	}
	return nil
}

func (s *Stream) removeReader(r *Reader) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return // its readers were let go when it closed
	}
	fd := r.feed
	before := len(fd.readers)
	fd.remove(r)
	if len(fd.readers) == before {
		return
	}
	s.readers--
	if fd != s.raw && len(fd.readers) == 0 {
		s.feeds = slices.DeleteFunc(s.feeds, func(x *feed) bool { return x == fd })
	}
	if s.readers == 0 && !s.closed {
		s.armIdle()
	}
}

// flushLoop wakes the readers that have packets once per window, when
// writes are merged; it ends with the stream.
func (s *Stream) flushLoop(window time.Duration) {
	t := time.NewTicker(window)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		s.mu.Lock()
		s.raw.flush()
		for _, fd := range s.feeds {
			fd.flush()
		}
		s.mu.Unlock()
	}
}

// armIdle starts the no-reader timer; called under s.mu.
func (s *Stream) armIdle() {
	if s.readers > 0 || s.hub.cfg.NoReaderTimeout <= 0 || s.idle != nil {
		return
	}
	s.idle = time.AfterFunc(s.hub.cfg.NoReaderTimeout, func() {
		s.mu.Lock()
		fire := !s.closed && s.readers == 0
		s.idle = nil
		s.mu.Unlock()
		if fire {
			s.hub.async(s.path, func() { s.hub.cfg.OnNoneReader(s) })
		}
	})
}

// Close ends the stream: its publisher's next write fails and every reader
// gets ErrStreamClosed.
func (s *Stream) Close() { s.end(false) }

// end closes the stream. When its source ended (continuable) and the hub
// has a ContinueGrace, the readers of formats that can follow a new
// publisher wait for one instead of ending.
func (s *Stream) end(continuable bool) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	wasReady := s.ready
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	var readers, waiting []*Reader
	readers = append(readers, s.raw.readers...)
	for _, fd := range s.feeds {
		if _, ok := fd.muxer.(Continuer); ok && continuable && wasReady && s.hub.cfg.ContinueGrace > 0 {
			waiting = append(waiting, fd.readers...)
			continue
		}
		readers = append(readers, fd.readers...)
	}
	var c *continuation
	if continuable && wasReady && s.hub.cfg.ContinueGrace > 0 {
		c = &continuation{tracks: s.tracks, lastDTS: s.lastDTS, step: s.lastStep, readers: waiting}
	}
	s.raw, s.feeds, s.readers = &feed{}, nil, 0
	s.mu.Unlock()
	for _, r := range readers {
		r.fail(ErrStreamClosed)
	}
	s.hub.remove(s)
	if c != nil {
		s.hub.park(s.path, c)
	}
	close(s.done)
	s.hub.log.Info("stream closed", zap.String("stream", s.path.String()), zap.Int("readers", len(readers)), zap.Int("waitingForPublisher", len(waiting)))
	if wasReady {
		s.hub.async(s.path, func() { s.hub.cfg.OnStreamChanged(s, false) })
	}
}

// Info describes the stream for listings and hooks.
func (s *Stream) Info() engineapi.StreamInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	info := engineapi.StreamInfo{Vhost: s.path.Vhost, App: s.path.App, Stream: s.path.Stream, Origin: s.origin.Kind,
		OriginURL: s.origin.URL, OriginAddr: s.origin.RemoteAddr, Ready: s.ready && !s.closed, Readers: s.readers, StartedAt: s.startedAt.UTC(),
		UptimeSec: time.Since(s.startedAt).Seconds(), Tracks: make([]engineapi.TrackInfo, 0, len(s.tracks))}
	for i, t := range s.tracks {
		st := s.stats[i]
		ti := engineapi.TrackInfo{ID: t.ID, Kind: string(t.Kind()), Codec: string(t.Codec), BitrateKbps: st.kbps, Frames: st.frames}
		if st.frames == 0 {
			// The input may still be filling the track in (parameter sets,
			// the size of the first keyframe) without this lock; it stops
			// before its first frame, which write takes under the lock.
			info.Tracks = append(info.Tracks, ti)
			continue
		}
		ti.Ready = t.Ready()
		if t.Kind() == media.KindVideo {
			ti.Width, ti.Height, ti.FPS = t.Width, t.Height, st.fps
		} else {
			ti.SampleRate, ti.Channels = t.SampleRate, t.Channels
		}
		info.Tracks = append(info.Tracks, ti)
		info.BytesIn += st.bytes
		info.BitrateKbps += st.kbps
	}
	return info
}
