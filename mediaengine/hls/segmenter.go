package hls

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/codec/aac"
	"github.com/svcplatform/svc/mediaengine/codec/h264"
	"github.com/svcplatform/svc/mediaengine/codec/h265"
	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
)

// Segmenter cuts one stream into segments for all its HLS viewers.
type Segmenter struct {
	path   media.Path
	hub    *hub.Hub
	format string
	target time.Duration
	keep   int
	log    *zap.Logger
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	tracks   []*media.Track
	gen      int
	inits    map[int][]byte
	segs     []*segment
	nextSeq  uint64
	ended    bool
	updated  chan struct{} // closed and replaced on every change
	bitrate  float64       // bits per second of the last segment
	firstErr error

	shift timeShift // owned by run's goroutine
}

// timeShift keeps the segments' timestamps going forward across publisher
// changes: a source that reconnects starts again near zero, and a player
// that ignores the discontinuity tag (ffmpeg's HLS reader does) would see
// time jump back. Each publisher's frames are moved to start shiftGap after
// the latest DTS written before; a publisher already ahead is left as it
// is.
type timeShift struct {
	by   time.Duration // added to the current publisher's timestamps
	last time.Duration // the latest DTS written, shifted
	seen bool
}

// shiftGap separates two publishers' frames; it is wider than any audio
// lead over the first video keyframe, so no track steps back.
const shiftGap = time.Second

// start begins a publisher whose first frame has DTS first.
func (t *timeShift) start(first time.Duration) {
	t.by = 0
	if t.seen && first <= t.last {
		t.by = t.last + shiftGap - first
	}
}

// frame returns f with the shift applied (a copy: frames are shared with
// the hub's other readers) and notes its DTS.
func (t *timeShift) frame(f *media.Frame) *media.Frame {
	if t.by != 0 {
		c := *f
		c.PTS += t.by
		c.DTS += t.by
		f = &c
	}
	if !t.seen || f.DTS > t.last {
		t.last, t.seen = f.DTS, true
	}
	return f
}

func newSegmenter(h *hub.Hub, path media.Path, cfg Config, log *zap.Logger) *Segmenter {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Segmenter{path: path, hub: h, format: cfg.Format, target: cfg.SegmentDuration, keep: cfg.Segments + 3,
		log: log.With(zap.String("stream", path.String())), cancel: cancel, done: make(chan struct{}),
		inits: map[int][]byte{}, updated: make(chan struct{})}
	go s.run(ctx, cfg.WaitStream)
	return s
}

// changed wakes everyone waiting for a segment; called under s.mu.
func (s *Segmenter) changed() {
	close(s.updated)
	s.updated = make(chan struct{})
}

// run subscribes and segments until closed; when the publisher goes it
// subscribes again for the next one.
func (s *Segmenter) run(ctx context.Context, wait time.Duration) {
	defer close(s.done)
	defer func() {
		s.mu.Lock()
		s.ended = true
		s.changed()
		s.mu.Unlock()
	}()
	for first := true; ctx.Err() == nil; first = false {
		sctx, cancel := context.WithTimeout(ctx, wait)
		rd, err := s.hub.Subscribe(sctx, s.path, nil, "hls segmenter")
		cancel()
		if err != nil {
			if first {
				s.mu.Lock()
				s.firstErr = err
				s.mu.Unlock()
				return
			}
			continue // keep waiting for a new publisher while viewers remain
		}
		err = s.segment(ctx, rd)
		rd.Close()
		if !errors.Is(err, hub.ErrStreamClosed) {
			return
		}
	}
}

// segment reads one publisher's frames.
func (s *Segmenter) segment(ctx context.Context, rd *hub.Reader) error {
	tracks := rd.Tracks()
	var w segmentWriter
	var err error
	if s.format == "ts" {
		w, err = newTSWriter(tracks)
	} else {
		w, err = newFMP4Writer(tracks)
	}
	if err != nil {
		s.log.Warn("stream cannot be segmented", zap.Error(err))
		s.mu.Lock()
		if s.tracks == nil {
			s.firstErr = err // the first viewer is told why
		}
		s.mu.Unlock()
		return err
	}
	hasVideo := false
	for _, t := range tracks {
		hasVideo = hasVideo || t.Kind() == media.KindVideo
	}
	s.mu.Lock()
	s.gen++
	gen := s.gen
	s.tracks = tracks
	s.inits[gen] = w.init()
	s.mu.Unlock()
	var pkts []*hub.Packet
	started := false
	var segStart time.Duration
	for {
		pkts, err = rd.Next(ctx, pkts[:0])
		if err != nil {
			return err
		}
		for _, p := range pkts {
			f := p.Frame
			boundary := p.Keyframe && (!hasVideo || f.Track.Kind() == media.KindVideo)
			if !started {
				if !boundary {
					continue
				}
				s.shift.start(f.DTS)
				f = s.shift.frame(f)
				started, segStart = true, f.DTS
				w.write(f, false)
				continue
			}
			f = s.shift.frame(f)
			cut := boundary && f.DTS-segStart >= s.target
			if data := w.write(f, cut); data != nil {
				s.add(gen, data, f.DTS-segStart)
			}
			if cut {
				segStart = f.DTS
			}
		}
		clear(pkts)
	}
}

func (s *Segmenter) add(gen int, data []byte, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seg := &segment{seq: s.nextSeq, data: data, duration: d, gen: gen}
	if n := len(s.segs); n > 0 {
		seg.disc = s.segs[n-1].disc
		if s.segs[n-1].gen != gen {
			seg.discontinuity = true
			seg.disc++
		}
	}
	s.nextSeq++
	s.segs = append(s.segs, seg)
	if len(s.segs) > s.keep {
		s.segs[0] = nil
		s.segs = s.segs[1:]
	}
	if d > 0 {
		s.bitrate = float64(len(data)) * 8 / d.Seconds()
	}
	for g := range s.inits {
		if g < s.segs[0].gen {
			delete(s.inits, g)
		}
	}
	s.changed()
}

// waitSegment waits until segment seq exists (or, with seq < 0, until any
// does), the segmenter ends, or ctx ends.
func (s *Segmenter) waitSegment(ctx context.Context, seq int64) (*segment, bool) {
	for {
		s.mu.Lock()
		var found *segment
		if seq < 0 && len(s.segs) > 0 {
			found = s.segs[len(s.segs)-1]
		}
		for _, sg := range s.segs {
			if int64(sg.seq) == seq {
				found = sg
			}
		}
		gone := seq >= 0 && uint64(seq) < s.nextSeq && found == nil
		tooFar := seq > int64(s.nextSeq)+1
		ended, updated := s.ended, s.updated
		s.mu.Unlock()
		if found != nil {
			return found, true
		}
		if gone || ended || tooFar {
			return nil, false
		}
		select {
		case <-updated:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// waitTracks waits for the first subscription; it fails when the stream
// did not appear in time.
func (s *Segmenter) waitTracks(ctx context.Context) ([]*media.Track, error) {
	for {
		s.mu.Lock()
		tracks, ended, err, updated := s.tracks, s.ended, s.firstErr, s.updated
		s.mu.Unlock()
		if tracks != nil {
			return tracks, nil
		}
		if ended {
			if err == nil {
				err = hub.ErrStreamNotFound
			}
			return nil, err
		}
		select {
		case <-updated:
		case <-ctx.Done():
			return nil, hub.ErrStreamNotFound
		case <-time.After(50 * time.Millisecond): // tracks are set without a change signal
		}
	}
}

func (s *Segmenter) initSegment(gen int) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.inits[gen]
	return b, ok && b != nil
}

// codecs is the RFC 6381 CODECS attribute for the master playlist.
func codecs(tracks []*media.Track) string {
	var out []string
	for _, t := range tracks {
		switch t.Codec {
		case media.CodecH264:
			if c, err := h264.NewDecoderConfig(t.SPS, t.PPS); err == nil {
				out = append(out, c.Codec())
			}
		case media.CodecH265:
			if c, err := h265.NewDecoderConfig(t.VPS, t.SPS, t.PPS); err == nil {
				out = append(out, c.Codec())
			}
		case media.CodecAAC:
			if c, err := aac.ParseConfig(t.AudioSpecificConfig); err == nil {
				out = append(out, c.Codec())
			}
		case media.CodecVP8:
			// The VP codec string (VP Codec ISO Media File Format
			// Binding, "Codecs Parameter String"): profile 0, the level
			// and bit depth the vpcC of the init segment says.
			out = append(out, "vp08.00.10.08")
		case media.CodecOpus:
			out = append(out, "opus")
		}
	}
	return strings.Join(out, ",")
}

// Close stops the segmenter.
func (s *Segmenter) Close() {
	s.cancel()
	<-s.done
}
