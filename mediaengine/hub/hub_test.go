package hub

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/mediaengine/internal/mediatest"
	"github.com/svcplatform/svc/mediaengine/media"
)

func testTracks() []*media.Track {
	tr := mediatest.Tracks()
	tr[0].Width, tr[0].Height = 0, 0 // the hub fills them from the SPS
	return tr
}

// frames makes n video frames at 25 fps with a keyframe every gop frames.
func frames(tr []*media.Track, from, n, gop int) []*media.Frame {
	var out []*media.Frame
	for i := from; i < from+n; i++ {
		ts := time.Duration(i) * 40 * time.Millisecond
		out = append(out, &media.Frame{Track: tr[0], PTS: ts, DTS: ts, Keyframe: i%gop == 0, NALUs: [][]byte{{0x65, byte(i)}}})
	}
	return out
}

// countingFormat is a Format whose muxer prefixes each frame with a marker
// and counts how often it serialised, to prove one serialisation per frame
// however many readers.
type countingFormat struct{ muxed *int }

func (c countingFormat) Name() string { return "counting" }
func (c countingFormat) NewMuxer([]*media.Track) (Muxer, error) {
	return muxerFunc(func(f *media.Frame) (Packet, bool) {
		*c.muxed++
		return Packet{Data: append([]byte{'F'}, f.NALUs[0]...), Keyframe: f.Keyframe}, true
	}), nil
}

type muxerFunc func(f *media.Frame) (Packet, bool)

func (m muxerFunc) Header() []byte                      { return []byte("HDR") }
func (m muxerFunc) Frame(f *media.Frame) (Packet, bool) { return m(f) }

func newHub(t *testing.T, cfg Config) *Hub {
	h := New(cfg, zaptest.NewLogger(t))
	t.Cleanup(h.Close)
	return h
}

func TestPublishSubscribeAndGOPCache(t *testing.T) {
	changed := make(chan bool, 4)
	h := newHub(t, Config{ReaderQueueFrames: 64, OnStreamChanged: func(s *Stream, reg bool) { changed <- reg }})
	path := media.Path{App: "live", Stream: "cam"}
	tr := testTracks()
	tr[0].SPS = nil // parameter sets arrive in-band later
	pub, err := h.Publish(path, Origin{Kind: "test"}, tr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Publish(path, Origin{Kind: "test"}, testTracks()); !errors.Is(err, ErrAlreadyPublishing) {
		t.Fatalf("second publisher: %v, want ErrAlreadyPublishing", err)
	}
	fs := frames(tr, 0, 12, 5)
	pub.WriteFrame(fs[0]) // dropped: no SPS yet
	tr[0].SPS = mediatest.H264SPS
	for _, f := range fs[1:8] { // 1..4 dropped (no keyframe), 5 starts the stream
		if err := pub.WriteFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if !<-changed {
		t.Fatal("on_stream_changed(registered) missing")
	}
	if tr[0].Width != 640 || tr[0].Height != 360 {
		t.Fatalf("size from SPS = %dx%d", tr[0].Width, tr[0].Height)
	}
	muxed := 0
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	r1, err := h.Subscribe(ctx, path, countingFormat{&muxed}, "r1")
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := h.Subscribe(ctx, path, countingFormat{&muxed}, "r2")
	raw, _ := h.Subscribe(ctx, path, nil, "raw")
	if string(r1.Header()) != "HDR" || raw.Header() != nil {
		t.Fatal("headers")
	}
	got, err := r1.Next(ctx, nil)
	if err != nil || len(got) != 3 || !got[0].Keyframe || got[0].Data[2] != 5 {
		t.Fatalf("GOP cache start: %d packets, %v", len(got), err)
	}
	for _, f := range fs[8:] {
		pub.WriteFrame(f)
	}
	if muxed != 3+4 {
		t.Fatalf("serialised %d times for 7 frames and 2 readers, want 7", muxed)
	}
	got, _ = r2.Next(ctx, got[:0])
	if len(got) != 7 || len(got[3].Data) == 0 {
		t.Fatalf("r2 got %d packets", len(got))
	}
	rawGot, _ := raw.Next(ctx, nil)
	if len(rawGot) != 7 || rawGot[0].Data != nil || rawGot[6].Frame != fs[11] {
		t.Fatalf("raw reader got %d packets", len(rawGot))
	}
	if s, _ := h.Stream(path); s.Readers() != 3 || s.Info().Tracks[0].Width != 640 {
		t.Fatalf("stream info %+v", s.Info())
	}
	r2.Close()
	if _, err := r2.Next(ctx, nil); !errors.Is(err, ErrReaderClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
	pub.Close()
	if _, err := r1.Next(ctx, nil); !errors.Is(err, ErrStreamClosed) {
		t.Fatalf("Next after the stream ended: %v", err)
	}
	if <-changed {
		t.Fatal("on_stream_changed(unregistered) missing")
	}
	if err := pub.WriteFrame(fs[0]); !errors.Is(err, ErrStreamClosed) {
		t.Fatalf("write after close: %v", err)
	}
	if _, ok := h.Stream(path); ok {
		t.Fatal("closed stream still listed")
	}
}

func TestSlowReaderDropsWithoutSlowingOthers(t *testing.T) {
	h := newHub(t, Config{ReaderQueueFrames: 16})
	path := media.Path{App: "live", Stream: "cam"}
	tr := testTracks()
	pub, _ := h.Publish(path, Origin{Kind: "test"}, tr)
	fs := frames(tr, 0, 200, 25)
	pub.WriteFrame(fs[0])
	ctx := context.Background()
	slow, _ := h.Subscribe(ctx, path, nil, "slow")
	fast, _ := h.Subscribe(ctx, path, nil, "fast")
	var got []*Packet
	received := 1
	got, _ = fast.Next(ctx, got[:0])
	for _, f := range fs[1:] {
		pub.WriteFrame(f)
		got, _ = fast.Next(ctx, got[:0])
		received += len(got)
	}
	if received != 200 || fast.Dropped() != 0 {
		t.Fatalf("fast reader got %d of 200, dropped %d", received, fast.Dropped())
	}
	if slow.Dropped() == 0 {
		t.Fatal("the slow reader's drops were not counted")
	}
	// The slow reader resumes at a keyframe.
	got, _ = slow.Next(ctx, got[:0])
	if len(got) != 16 {
		t.Fatalf("slow reader queue held %d, want 16", len(got))
	}
	pub.WriteFrame(&media.Frame{Track: tr[0], DTS: 9 * time.Second, NALUs: [][]byte{{0x41}}})
	pub.WriteFrame(&media.Frame{Track: tr[0], DTS: 10 * time.Second, Keyframe: true, NALUs: [][]byte{{0x65}}})
	got, _ = slow.Next(ctx, got[:0])
	if len(got) != 1 || !got[0].Keyframe {
		t.Fatalf("after dropping, the slow reader got %d packets (keyframe first: %v)", len(got), len(got) > 0 && got[0].Keyframe)
	}
}

func TestSubscribeWaitsForTheStreamAndNoneReader(t *testing.T) {
	none := make(chan media.Path, 1)
	h := newHub(t, Config{NoReaderTimeout: 50 * time.Millisecond, OnNoneReader: func(s *Stream) { none <- s.Path() }})
	path := media.Path{App: "live", Stream: "later"}
	tr := testTracks()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		r, err := h.Subscribe(ctx, path, nil, "early")
		if err == nil {
			r.Close()
		}
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	pub, _ := h.Publish(path, Origin{Kind: "test"}, tr)
	pub.WriteFrame(frames(tr, 0, 1, 25)[0])
	if err := <-done; err != nil {
		t.Fatalf("a reader waiting for the stream: %v", err)
	}
	select {
	case p := <-none:
		if p.Stream != "later" || p.Vhost != media.DefaultVhost {
			t.Fatalf("none reader for %v", p)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("on_stream_none_reader never came")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := h.Subscribe(ctx, media.Path{App: "live", Stream: "never"}, nil, "x"); !errors.Is(err, ErrStreamNotFound) {
		t.Fatalf("subscribe to a missing stream: %v", err)
	}
}

func TestMergedWritesWakeOncePerWindow(t *testing.T) {
	h := newHub(t, Config{MergeWindow: 50 * time.Millisecond})
	path := media.Path{App: "live", Stream: "merged"}
	tr := testTracks()
	pub, _ := h.Publish(path, Origin{Kind: "test"}, tr)
	fs := frames(tr, 0, 6, 25)
	pub.WriteFrame(fs[0])
	ctx := context.Background()
	r, _ := h.Subscribe(ctx, path, nil, "r")
	if got, _ := r.Next(ctx, nil); len(got) != 1 {
		t.Fatalf("the GOP cache is delivered at once: %d", len(got))
	}
	start := time.Now()
	for _, f := range fs[1:] {
		pub.WriteFrame(f)
	}
	got, err := r.Next(ctx, nil)
	if err != nil || len(got) != 5 {
		t.Fatalf("merged batch: %d packets, %v", len(got), err)
	}
	if waited := time.Since(start); waited > 200*time.Millisecond {
		t.Fatalf("merged packets waited %v, more than a few windows", waited)
	}
}

// TestKeyframeRequests: a source that can make keyframes is asked for one
// when a reader joins whose queue cannot take the GOP cache, and by
// RequestKeyframe; a source that cannot is never asked and says so.
func TestKeyframeRequests(t *testing.T) {
	h := New(Config{ReaderQueueFrames: 8}, zaptest.NewLogger(t))
	defer h.Close()
	tr := testTracks()
	pub, err := h.Publish(media.Path{App: "live", Stream: "k"}, Origin{Kind: "whip"}, tr[:1])
	if err != nil {
		t.Fatal(err)
	}
	path := pub.Stream().Path()
	if pub.Stream().RequestKeyframe() {
		t.Fatal("a source without a keyframe requester answered a request")
	}
	asked := make(chan struct{}, 8)
	pub.OnKeyframeRequest(func() { asked <- struct{}{} })
	for _, f := range frames(tr, 0, 5, 100) {
		pub.WriteFrame(f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rd, err := h.Subscribe(ctx, path, nil, "fits")
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if len(asked) != 0 {
		t.Fatal("a reader whose queue took the GOP cache asked for a keyframe")
	}
	for _, f := range frames(tr, 5, 20, 100) {
		pub.WriteFrame(f)
	}
	rd2, err := h.Subscribe(ctx, path, nil, "too small")
	if err != nil {
		t.Fatal(err)
	}
	defer rd2.Close()
	if len(asked) != 1 {
		t.Fatalf("%d keyframe requests after a reader joined that waits for a keyframe, want 1", len(asked))
	}
	if !pub.Stream().RequestKeyframe() || len(asked) != 2 {
		t.Fatal("RequestKeyframe did not reach the source")
	}
}

// TestInfoWhileTheInputFillsTheTrack: an input fills a track's parameter
// sets and size in, without the stream lock, until it writes the track's
// first frame (media.Track's contract); a listing polled meanwhile reads
// none of them (the race detector fails this test otherwise) and shows the
// track ready once the frame is in.
func TestInfoWhileTheInputFillsTheTrack(t *testing.T) {
	h := newHub(t, Config{ReaderQueueFrames: 8})
	tr := testTracks()
	sps, pps := tr[0].SPS, tr[0].PPS
	tr[0].SPS, tr[0].PPS = nil, nil
	pub, err := h.Publish(media.Path{App: "live", Stream: "fill"}, Origin{Kind: "whip"}, tr[:1])
	if err != nil {
		t.Fatal(err)
	}
	filled := make(chan struct{})
	go func() {
		defer close(filled)
		tr[0].SPS, tr[0].PPS, tr[0].Width, tr[0].Height = sps, pps, 640, 360
		if err := pub.WriteFrame(frames(tr, 0, 1, 25)[0]); err != nil {
			t.Error(err)
		}
	}()
	for polling := true; polling; {
		select {
		case <-filled:
			polling = false
		default:
		}
		if ti := pub.Stream().Info().Tracks[0]; ti.Frames == 0 && (ti.Ready || ti.Width != 0) {
			t.Fatalf("a track without frames listed as %+v", ti)
		}
	}
	if ti := pub.Stream().Info().Tracks[0]; !ti.Ready || ti.Width != 640 || ti.Frames != 1 {
		t.Fatalf("after the first frame the track is listed as %+v", ti)
	}
}
