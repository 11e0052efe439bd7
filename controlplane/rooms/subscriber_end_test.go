package rooms

import (
	"context"
	"testing"
)

// TestSubscriptionEndsWithItsEngineSession: the engine's report that a
// WHEP viewer left ends the subscription holding that session (and only
// it); reports of other sessions, streams or rooms change nothing, and a
// repeated report is harmless.
func TestSubscriptionEndsWithItsEngineSession(t *testing.T) {
	m := newMeeting(t)
	ctx := context.Background()
	pub := m.publish(t)
	sub := m.subscribe(t, pub)
	stream := streamName(m.room.RoomID, pub.PublicationID)
	for _, r := range [][2]string{{stream, "another-session"}, {string(m.room.RoomID) + ".0190f5a4-6a2b-7c3d-8e4f-000000000001", sub.EngineSession},
		{"0190f5a4-6a2b-7c3d-8e4f-000000000002." + pub.PublicationID, sub.EngineSession}, {"no-dot", sub.EngineSession}} {
		if err := m.s.SubscriberSessionEnded(ctx, r[0], r[1]); err != nil {
			t.Fatal(err)
		}
		if got := m.subscription(t, sub.SubscriptionID); got.State != SubscriptionActive {
			t.Fatalf("after a report of %v: %+v", r, got)
		}
	}
	for range 2 {
		if err := m.s.SubscriberSessionEnded(ctx, stream, sub.EngineSession); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.subscription(t, sub.SubscriptionID); got.State != SubscriptionEnded || got.EngineSession != "" {
		t.Fatalf("after its session ended: %+v", got)
	}
	if err := m.s.Unsubscribe(ctx, m.room.RoomID, m.viewer.Token, sub.SubscriptionID, sub.EngineSession); err == nil {
		t.Fatal("a DELETE of an ended session")
	}
	if got, _, err := m.s.publication(ctx, m.room.RoomID, pub.PublicationID); err != nil || got.State != PublicationActive {
		t.Fatalf("the publication after its viewer left: %+v %v", got, err)
	}
}
