package rooms

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/store/storetest"
)

// TestSweepClosesEmptyRooms: the leader's sweep times out a silent
// participant and then closes the room once nobody has been in it for
// the empty-room timeout, but not a room someone is in, nor one left
// only just now; the closed room's tickets no longer admit.
func TestSweepClosesEmptyRooms(t *testing.T) {
	node := storetest.SingleNode(t, Index)
	clk := &clock{t: time.Now().UTC()}
	s := &Service{Store: node, Reader: node.State(), NodeID: "cp1", Now: clk.now, HeartbeatTimeout: 30 * time.Second, EmptyRoomTimeout: 10 * time.Minute}
	ctx := context.Background()
	busy := mustRoom(t, s, CreateRequest{Name: "Busy"})
	idle := mustRoom(t, s, CreateRequest{Name: "Idle"})
	j, err := s.Join(ctx, idle.RoomID, JoinRequest{AccessTicket: mustTicket(t, s, idle, TicketRequest{SubjectIssuer: "crm", SubjectID: "a"})})
	if err != nil {
		t.Fatal(err)
	}
	late := mustTicket(t, s, idle, TicketRequest{SubjectIssuer: "crm", SubjectID: "b", ExpiresInMinutes: 60})
	kept, err := s.Join(ctx, busy.RoomID, JoinRequest{AccessTicket: mustTicket(t, s, busy, TicketRequest{SubjectIssuer: "crm", SubjectID: "c"})})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		clk.add(20 * time.Second)
		if err := s.Heartbeat(ctx, busy.RoomID, kept.Token); err != nil {
			t.Fatal(err)
		}
	}
	if out, closed, err := s.Sweep(ctx); err != nil || out != 1 || closed != 0 {
		t.Fatalf("first sweep: %d timed out, %d closed, %v; want 1, 0", out, closed, err)
	}
	if _, err := s.Verify(ctx, idle.RoomID, j.Token); err == nil {
		t.Fatal("a timed-out participant's token still works")
	}
	clk.add(9 * time.Minute)
	if err := s.Heartbeat(ctx, busy.RoomID, kept.Token); err == nil {
		t.Fatal("a participant silent for 9 minutes still heartbeats")
	}
	// The busy room's participant went silent too: it times out now, and
	// its room closes 10 minutes later.
	if out, closed, err := s.Sweep(ctx); err != nil || out != 1 || closed != 0 {
		t.Fatalf("a room left 9 minutes ago was closed: %d timed out, %d closed, %v", out, closed, err)
	}
	clk.add(2 * time.Minute)
	if _, closed, err := s.Sweep(ctx); err != nil || closed != 1 {
		t.Fatalf("sweep after the empty-room timeout closed %d, %v; want 1", closed, err)
	}
	clk.add(9 * time.Minute)
	if _, closed, err := s.Sweep(ctx); err != nil || closed != 1 {
		t.Fatalf("the second room closed %d, %v; want 1", closed, err)
	}
	r, err := s.Room(ctx, owner, idle.RoomID)
	if err != nil || r.Status != RoomClosed || r.ClosedAt == nil {
		t.Fatalf("the idle room: %+v %v", r, err)
	}
	if _, err := s.Join(ctx, idle.RoomID, JoinRequest{AccessTicket: late}); !errors.Is(err, ErrRoomClosed) {
		t.Fatalf("a ticket of a closed room: %v", err)
	}
	var seen []string
	for _, ev := range outbox(t, s) {
		seen = append(seen, ev.EventName)
		if ev.EventName == events.RTCRoomClosed && !strings.Contains(string(ev.Data), `"ParticipantId":"system"`) {
			t.Fatalf("rtc.room.closed by the sweep: %s", ev.Data)
		}
	}
	want := "rtc.room.created,rtc.room.created,rtc.participant.joined,rtc.participant.joined,rtc.participant.timed_out," +
		"rtc.participant.timed_out,rtc.room.closed,rtc.room.closed"
	if strings.Join(seen, ",") != want {
		t.Fatalf("events %v, want %s", seen, want)
	}
}
