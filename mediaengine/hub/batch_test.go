package hub

import (
	"context"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/test/testkit"
)

// TestReaderBatch: a batching reader is woken once its batch is queued, at
// a keyframe, or once its queue spans the batch's time; never for fewer
// plain frames arrived within that time; and the batch is capped at half
// the queue.
func TestReaderBatch(t *testing.T) {
	h := newHub(t, Config{ReaderQueueFrames: 64})
	path := media.Path{App: "live", Stream: "cam"}
	tr := testTracks()
	pub, err := h.Publish(path, Origin{Kind: "test"}, tr[:1])
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	fs := frames(tr, 0, 100, 50) // keyframes at 0 and 50
	pub.WriteFrame(fs[0])
	ctx := context.Background()
	rd, err := h.SubscribeDrain(ctx, path, "batch")
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	// next reads what is queued and drops a wake-up left from before (Next
	// takes packets without waiting when some are queued).
	next := func() []*Packet {
		got, err := rd.Next(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-rd.wake:
		default:
		}
		return got
	}
	if got := next(); len(got) != 1 {
		t.Fatalf("the GOP cache: %d packets", len(got))
	}
	rd.SetBatch(100, time.Hour)
	if rd.batch != 32 {
		t.Fatalf("batch %d, want half the queue", rd.batch)
	}
	rd.SetBatch(4, time.Hour)
	woken := func() bool { return len(rd.wake) == 1 }
	for _, f := range fs[1:4] {
		pub.WriteFrame(f)
	}
	if woken() {
		t.Fatal("woken for 3 plain frames of a batch of 4")
	}
	pub.WriteFrame(fs[4])
	if !woken() {
		t.Fatal("not woken with the batch queued")
	}
	if got := next(); len(got) != 4 {
		t.Fatalf("%d packets, want the batch of 4", len(got))
	}
	pub.WriteFrame(fs[5])
	if woken() {
		t.Fatal("woken for one plain frame")
	}
	for _, f := range fs[6:8] {
		pub.WriteFrame(f)
	}
	next()
	for _, f := range fs[8:50] { // drained by Next in batches of 4
		pub.WriteFrame(f)
		if woken() {
			next()
		}
	}
	pub.WriteFrame(fs[50])
	if !woken() {
		t.Fatal("not woken at a keyframe")
	}
	next()
	// A batch spanning its time wakes the reader whatever its count.
	rd.SetBatch(4, 20*time.Millisecond)
	pub.WriteFrame(fs[51])
	first := h.Now()
	testkit.Eventually(t, 10*time.Second, "the batch's time passing", func() bool { return h.Now()-first > int64(30*time.Millisecond) })
	if woken() {
		t.Fatal("woken before the span")
	}
	pub.WriteFrame(fs[52])
	if !woken() {
		t.Fatal("not woken once the queue spans the batch's time")
	}
	if got := next(); len(got) != 2 {
		t.Fatalf("%d packets, want 2", len(got))
	}
}
