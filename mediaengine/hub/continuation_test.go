package hub

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
)

// contFormat serialises a frame as its DTS in milliseconds and, as a
// Continuer, announces a change of tracks with "CONT".
type contFormat struct{}

func (contFormat) Name() string { return "cont" }
func (contFormat) NewMuxer(tracks []*media.Track) (Muxer, error) {
	return contMuxer{tracks}, nil
}

type contMuxer struct{ tracks []*media.Track }

func (m contMuxer) Header() []byte { return []byte("HDR") }
func (m contMuxer) Frame(f *media.Frame) (Packet, bool) {
	return Packet{Data: []byte(f.DTS.String()), Keyframe: f.Keyframe}, true
}
func (m contMuxer) Continue(prev []*media.Track, at time.Duration) []byte {
	if len(prev) == len(m.tracks) && bytes.Equal(prev[0].SPS, m.tracks[0].SPS) {
		return nil
	}
	return []byte("CONT@" + at.String())
}

func drain(t *testing.T, r *Reader, want int) []*Packet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var got []*Packet
	for len(got) < want {
		var err error
		if got, err = r.Next(ctx, got); err != nil {
			t.Fatalf("after %d of %d packets: %v", len(got), want, err)
		}
	}
	return got
}

// TestReadersFollowAReconnectingSource: a source drops and comes back
// within the grace; a reader of a Continuer format carries on without
// resubscribing, with timestamps that go on from where they stopped; a raw
// reader ends with the old stream.
func TestReadersFollowAReconnectingSource(t *testing.T) {
	changed := make(chan bool, 8)
	h := newHub(t, Config{ContinueGrace: time.Second, OnStreamChanged: func(_ *Stream, reg bool) { changed <- reg }})
	path := media.Path{App: "live", Stream: "cam"}
	ctx := context.Background()
	tr := testTracks()
	pub, _ := h.Publish(path, Origin{Kind: "test"}, tr)
	for _, f := range frames(tr, 0, 10, 5) {
		pub.WriteFrame(f)
	}
	r, err := h.Subscribe(ctx, path, contFormat{}, "player")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := h.Subscribe(ctx, path, nil, "raw")
	drain(t, r, 5) // the GOP cache: frames 5..9, last DTS 360 ms
	pub.Close()
	if _, err := raw.Next(ctx, nil); !errors.Is(err, ErrStreamClosed) {
		t.Fatalf("a raw reader after the source dropped: %v", err)
	}
	if r.Err() != nil {
		t.Fatalf("the player was ended instead of waiting: %v", r.Err())
	}
	// The camera is back with the same parameters, its clock from zero.
	tr2 := testTracks()
	pub2, err := h.Publish(path, Origin{Kind: "test"}, tr2)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames(tr2, 0, 3, 5) {
		pub2.WriteFrame(f)
	}
	got := drain(t, r, 3)
	if string(got[0].Data) != "400ms" || string(got[2].Data) != "480ms" {
		t.Fatalf("timestamps after the reconnect: %q %q, want 400ms (one frame after 360ms) and 480ms", got[0].Data, got[2].Data)
	}
	if r.Stream() == pub.Stream() || r.Stream() != pub2.Stream() || pub2.Stream().Readers() != 1 {
		t.Fatal("the reader did not move to the new stream")
	}
	// Registered, unregistered, registered again: the control plane sees
	// the outage.
	for _, want := range []bool{true, false, true} {
		if got := <-changed; got != want {
			t.Fatalf("on_stream_changed %v, want %v", got, want)
		}
	}
	// A new SPS: the reader is told before the next frames.
	pub2.Close()
	tr3 := testTracks()
	tr3[0].SPS = append([]byte(nil), tr3[0].SPS...)
	tr3[0].SPS[len(tr3[0].SPS)-1] ^= 1
	pub3, _ := h.Publish(path, Origin{Kind: "test"}, tr3)
	for _, f := range frames(tr3, 0, 2, 5) {
		pub3.WriteFrame(f)
	}
	got = drain(t, r, 3)
	if string(got[0].Data) != "CONT@520ms" || string(got[1].Data) != "520ms" {
		t.Fatalf("after a configuration change: %q then %q", got[0].Data, got[1].Data)
	}
	// Closing the player ends it where it is.
	r.Close()
	if pub3.Stream().Readers() != 0 {
		t.Fatal("a closed reader stayed on the stream")
	}
}

// TestWaitingReadersEndWhenNoPublisherComes: after the grace the players
// end; a stream closed on purpose ends them at once; a player that leaves
// while waiting is not carried over.
func TestWaitingReadersEndWhenNoPublisherComes(t *testing.T) {
	h := newHub(t, Config{ContinueGrace: 100 * time.Millisecond})
	ctx := context.Background()
	tr := testTracks()
	path := media.Path{App: "live", Stream: "gone"}
	pub, _ := h.Publish(path, Origin{Kind: "test"}, tr)
	pub.WriteFrame(frames(tr, 0, 1, 5)[0])
	r, _ := h.Subscribe(ctx, path, contFormat{}, "player")
	leaver, _ := h.Subscribe(ctx, path, contFormat{}, "leaver")
	pub.Close()
	leaver.Close()
	start := time.Now()
	ctx2, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var err error
	for err == nil {
		_, err = r.Next(ctx2, nil)
	}
	if !errors.Is(err, ErrStreamClosed) || time.Since(start) < 80*time.Millisecond {
		t.Fatalf("the waiting player ended with %v after %s", err, time.Since(start))
	}

	stopped := media.Path{App: "live", Stream: "stopped"}
	pub, _ = h.Publish(stopped, Origin{Kind: "test"}, tr)
	pub.WriteFrame(frames(tr, 0, 1, 5)[0])
	r, _ = h.Subscribe(ctx, stopped, contFormat{}, "player")
	drain(t, r, 1)
	pub.Stream().Close() // stopped on purpose
	if _, err := r.Next(ctx, nil); !errors.Is(err, ErrStreamClosed) {
		t.Fatalf("a stream closed on purpose left its player waiting: %v", err)
	}
}
