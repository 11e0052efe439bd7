package hub

import (
	"context"
	"errors"
	"testing"

	"github.com/svcplatform/svc/mediaengine/media"
)

// TestSubscribeDrainKeepsTheLastFrames: when a stream ends with frames
// still queued, a draining reader gets them before ErrStreamClosed, and a
// plain reader does not.
func TestSubscribeDrainKeepsTheLastFrames(t *testing.T) {
	h := newHub(t, Config{ReaderQueueFrames: 64})
	path := media.Path{App: "live", Stream: "cam"}
	tr := testTracks()
	pub, err := h.Publish(path, Origin{Kind: "test"}, tr[:1])
	if err != nil {
		t.Fatal(err)
	}
	fs := frames(tr, 0, 10, 25)
	pub.WriteFrame(fs[0])
	ctx := context.Background()
	drain, err := h.SubscribeDrain(ctx, path, "drain")
	if err != nil {
		t.Fatal(err)
	}
	plain, err := h.Subscribe(ctx, path, nil, "plain")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs[1:] {
		pub.WriteFrame(f)
	}
	pub.Close()
	got, err := drain.Next(ctx, nil)
	if err != nil || len(got) != 10 || got[9].Frame != fs[9] {
		t.Fatalf("draining reader: %d packets, %v", len(got), err)
	}
	if _, err := drain.Next(ctx, nil); !errors.Is(err, ErrStreamClosed) {
		t.Fatalf("after the drain: %v", err)
	}
	if got, err := plain.Next(ctx, nil); !errors.Is(err, ErrStreamClosed) || len(got) != 0 {
		t.Fatalf("plain reader: %d packets, %v", len(got), err)
	}
	drain.Close()
	plain.Close()
}
