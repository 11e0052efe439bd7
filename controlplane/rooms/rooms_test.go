package rooms

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/storetest"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

var owner = Caller{TokenID: "tok-backend"}

func newService(t *testing.T) (*Service, *clock) {
	t.Helper()
	node := storetest.SingleNode(t)
	clk := &clock{t: time.Now().UTC()}
	return &Service{Store: node, NodeID: "cp1", Now: clk.now, HeartbeatTimeout: 30 * time.Second}, clk
}

// outbox lists the events written so far.
func outbox(t *testing.T, s *Service) []events.Envelope {
	t.Helper()
	resp, err := s.Store.Range(context.Background(), events.OutboxPrefix, store.RangeOptions{End: store.PrefixEnd(events.OutboxPrefix)})
	if err != nil {
		t.Fatal(err)
	}
	var out []events.Envelope
	for _, kv := range resp.KVs {
		var ev events.Envelope
		if err := json.Unmarshal(kv.Value, &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

func mustRoom(t *testing.T, s *Service, req CreateRequest) *Room {
	t.Helper()
	r, _, err := s.CreateRoom(context.Background(), owner, req)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustTicket(t *testing.T, s *Service, r *Room, req TicketRequest) string {
	t.Helper()
	tk, _, err := s.IssueTicket(context.Background(), owner, r.RoomID, req)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestCreateRoomIsIdempotent: a retry with the same key and body returns
// the first room, concurrent retries make one room and one event, and the
// key reused for another body is a conflict.
func TestCreateRoomIsIdempotent(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	req := CreateRequest{Name: "Standup", IdempotencyKey: "k1"}
	var wg sync.WaitGroup
	ids := make([]RoomID, 8)
	created := make([]bool, 8)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, c, err := s.CreateRoom(ctx, owner, req)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i], created[i] = r.RoomID, c
		}()
	}
	wg.Wait()
	made := 0
	for i := range ids {
		if ids[i] != ids[0] {
			t.Fatalf("retries made rooms %v", ids)
		}
		if created[i] {
			made++
		}
	}
	if made != 1 {
		t.Fatalf("%d retries report creating the room, want 1", made)
	}
	if _, _, err := s.CreateRoom(ctx, owner, CreateRequest{Name: "Other", IdempotencyKey: "k1"}); !errors.Is(err, ErrIdempotencyConflict) {
		t.Fatalf("the key reused for another request: %v", err)
	}
	other, _, err := s.CreateRoom(ctx, Caller{TokenID: "tok-other"}, req)
	if err != nil || other.RoomID == ids[0] {
		t.Fatalf("another token's key is its own: %v %v", other, err)
	}
	evs := outbox(t, s)
	if len(evs) != 2 || evs[0].EventName != events.RTCRoomCreated || evs[0].EventID != string(ids[0]) && evs[1].EventID != string(ids[0]) {
		t.Fatalf("events %+v, want two rtc.room.created with the room ids", evs)
	}
}

// TestOneTicketOneJoin: of concurrent joins with one ticket exactly one
// succeeds; the ticket of another room, an expired ticket and a garbage
// ticket are refused.
func TestOneTicketOneJoin(t *testing.T) {
	s, clk := newService(t)
	ctx := context.Background()
	r := mustRoom(t, s, CreateRequest{Name: "Review"})
	tk := mustTicket(t, s, r, TicketRequest{SubjectIssuer: "crm", SubjectID: "u1", DisplayName: "Ann", Capabilities: []string{CapCameraPublish}})
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Join(ctx, r.RoomID, JoinRequest{AccessTicket: tk})
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, ErrTicketConsumed):
			t.Fatalf("a losing join: %v, want ErrTicketConsumed", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d joins with one ticket succeeded, want exactly 1", ok)
	}
	r2 := mustRoom(t, s, CreateRequest{Name: "Other"})
	tk2 := mustTicket(t, s, r2, TicketRequest{SubjectIssuer: "crm", SubjectID: "u2"})
	if _, err := s.Join(ctx, r.RoomID, JoinRequest{AccessTicket: tk2}); !errors.Is(err, ErrTicketInvalid) {
		t.Fatalf("another room's ticket: %v", err)
	}
	tk3 := mustTicket(t, s, r, TicketRequest{SubjectIssuer: "crm", SubjectID: "u3", ExpiresInMinutes: 1})
	clk.add(61 * time.Second)
	if _, err := s.Join(ctx, r.RoomID, JoinRequest{AccessTicket: tk3}); !errors.Is(err, ErrTicketInvalid) {
		t.Fatalf("an expired ticket: %v", err)
	}
	if _, err := s.Join(ctx, r.RoomID, JoinRequest{AccessTicket: "rat_nothing"}); !errors.Is(err, ErrTicketConsumed) && !errors.Is(err, ErrTicketInvalid) {
		t.Fatalf("an unknown ticket: %v", err)
	}
}

// TestWaitingRoomAndViewerCapabilities: without bypass a member waits; the
// host and a bypassing ticket are admitted; a viewer's publish
// capabilities are dropped.
func TestWaitingRoomAndViewerCapabilities(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	r := mustRoom(t, s, CreateRequest{Name: "Board", WaitingRoom: true})
	cases := []struct {
		req   TicketRequest
		state string
		caps  []string
	}{
		{TicketRequest{SubjectIssuer: "crm", SubjectID: "m", Role: RoleMember}, ParticipantWaiting, []string{}},
		{TicketRequest{SubjectIssuer: "crm", SubjectID: "b", Role: RoleMember, BypassWaitingRoom: true}, ParticipantAdmitted, []string{}},
		{TicketRequest{SubjectIssuer: "crm", SubjectID: "h", Role: RoleHost}, ParticipantAdmitted, []string{}},
		{TicketRequest{SubjectIssuer: "crm", SubjectID: "v", Role: RoleViewer, BypassWaitingRoom: true,
			Capabilities: []string{CapCameraPublish, CapMicrophonePublish, CapSubscribe}}, ParticipantAdmitted, []string{CapSubscribe}},
	}
	for _, c := range cases {
		j, err := s.Join(ctx, r.RoomID, JoinRequest{AccessTicket: mustTicket(t, s, r, c.req)})
		if err != nil {
			t.Fatal(err)
		}
		if j.Participant.State != c.state || strings.Join(j.Participant.Capabilities, ",") != strings.Join(c.caps, ",") {
			t.Fatalf("%s joined %s with %v, want %s with %v", c.req.Role, j.Participant.State, j.Participant.Capabilities, c.state, c.caps)
		}
	}
	if _, _, err := s.IssueTicket(ctx, owner, r.RoomID, TicketRequest{SubjectIssuer: "crm", SubjectID: "x", Capabilities: []string{"admin"}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("an unknown capability: %v", err)
	}
	if _, _, err := s.IssueTicket(ctx, Caller{TokenID: "tok-other"}, r.RoomID, TicketRequest{SubjectIssuer: "crm", SubjectID: "x"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another token's ticket for this room: %v", err)
	}
}

// TestTokenRefreshAndTimeout: refresh invalidates the old token at once;
// heartbeats keep a participant; silence past the timeout ends it with
// rtc.participant.timed_out, whose data has ids only.
func TestTokenRefreshAndTimeout(t *testing.T) {
	s, clk := newService(t)
	ctx := context.Background()
	r := mustRoom(t, s, CreateRequest{Name: "Sync"})
	j, err := s.Join(ctx, r.RoomID, JoinRequest{AccessTicket: mustTicket(t, s, r, TicketRequest{SubjectIssuer: "crm", SubjectID: "secret-subject",
		DisplayName: "Secret Name"})})
	if err != nil {
		t.Fatal(err)
	}
	newTok, version, err := s.RefreshToken(ctx, r.RoomID, j.Token)
	if err != nil || version != 2 {
		t.Fatalf("refresh: %v version %d", err, version)
	}
	if _, err := s.Verify(ctx, r.RoomID, j.Token); !errors.Is(err, ErrTokenInvalid) {
		t.Fatalf("the old token after refresh: %v", err)
	}
	if _, _, err := s.RefreshToken(ctx, r.RoomID, j.Token); !errors.Is(err, ErrTokenInvalid) {
		t.Fatalf("refreshing with the old token: %v", err)
	}
	if _, err := s.Verify(ctx, r.RoomID, newTok); err != nil {
		t.Fatalf("the new token: %v", err)
	}
	other := mustRoom(t, s, CreateRequest{Name: "Elsewhere"})
	if _, err := s.Verify(ctx, other.RoomID, newTok); !errors.Is(err, ErrTokenInvalid) {
		t.Fatalf("the token in another room: %v", err)
	}
	for range 4 {
		clk.add(20 * time.Second)
		if err := s.Heartbeat(ctx, r.RoomID, newTok); err != nil {
			t.Fatal(err)
		}
		if n, err := s.SweepTimedOut(ctx); err != nil || n != 0 {
			t.Fatalf("a participant sending heartbeats timed out: %d %v", n, err)
		}
	}
	clk.add(31 * time.Second)
	if n, err := s.SweepTimedOut(ctx); err != nil || n != 1 {
		t.Fatalf("sweep after silence: %d %v, want 1", n, err)
	}
	if _, err := s.Verify(ctx, r.RoomID, newTok); !errors.Is(err, ErrTokenInvalid) {
		t.Fatalf("a timed-out participant's token: %v", err)
	}
	var seen []string
	for _, ev := range outbox(t, s) {
		seen = append(seen, ev.EventName)
		if ev.EventName == events.RTCRoomCreated {
			continue
		}
		data := string(ev.Data)
		if strings.Contains(data, "Secret Name") || strings.Contains(data, "secret-subject") || strings.Contains(data, "http") {
			t.Fatalf("event %s carries a name, subject or URL: %s", ev.EventName, data)
		}
		var d map[string]any
		json.Unmarshal(ev.Data, &d)
		for _, k := range []string{"RoomId", "Sequence", "EventType", "ParticipantId", "TargetParticipantId", "occurredAtUtc"} {
			if _, ok := d[k]; !ok {
				t.Fatalf("event %s lacks %s: %s", ev.EventName, k, data)
			}
		}
	}
	if want := "rtc.room.created,rtc.participant.joined,rtc.room.created,rtc.participant.timed_out"; strings.Join(seen, ",") != want {
		t.Fatalf("events %v, want %s", seen, want)
	}
}

// TestLeave: leaving ends the token and emits rtc.participant.left once.
func TestLeave(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	r := mustRoom(t, s, CreateRequest{Name: "Chat"})
	j, err := s.Join(ctx, r.RoomID, JoinRequest{AccessTicket: mustTicket(t, s, r, TicketRequest{SubjectIssuer: "crm", SubjectID: "u"})})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Leave(ctx, r.RoomID, j.Token); err != nil {
		t.Fatal(err)
	}
	if err := s.Leave(ctx, r.RoomID, j.Token); !errors.Is(err, ErrTokenInvalid) {
		t.Fatalf("leaving twice: %v", err)
	}
	evs := outbox(t, s)
	if last := evs[len(evs)-1]; last.EventName != events.RTCParticipantLeft || !strings.Contains(string(last.Data), `"Sequence":2`) {
		t.Fatalf("last event %s %s, want rtc.participant.left with sequence 2", last.EventName, last.Data)
	}
}
