package rooms

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/svcplatform/svc/controlplane/store/storetest"
)

// streamRecorder stands in for the engine's recorder (the end-to-end test
// runs the real one): it notes the streams it records, and can be told to
// fail or to leave a stop unconfirmed.
type streamRecorder struct {
	mu        sync.Mutex
	recording map[string]bool
	fail      error
	unsealed  bool
	// broken are streams whose recording failed on the media server.
	broken map[string]bool
	starts int
}

func (r *streamRecorder) Failed(_ context.Context, _, stream string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.broken[stream], nil
}

func (r *streamRecorder) StartStream(_ context.Context, _, stream string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	r.recording[stream] = true
	delete(r.broken, stream)
	r.starts++
	return nil
}

func (r *streamRecorder) StopStream(_ context.Context, _, stream string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.recording, stream)
	return !r.unsealed, nil
}

// TestContinuousRecording: the policy gates a start; a second start
// answers the running recording; only the host's token starts or stops it
// from a device; a publication that starts meanwhile is recorded; a stop
// the media server has not confirmed stays Stopping until the sweep
// finishes it; a recorder that fails emits rtc.recording.failed.
func TestContinuousRecording(t *testing.T) {
	node := storetest.SingleNode(t, Index)
	rec := &streamRecorder{recording: map[string]bool{}}
	s := &Service{Store: node, Reader: node.State(), NodeID: "cp1", Recorder: rec}
	ctx := context.Background()
	r := mustRoom(t, s, CreateRequest{Name: "Board", MediaServerID: "media-1"})
	if _, err := s.StartRecording(ctx, owner, r.RoomID); !errors.Is(err, ErrRecordingNotAllowed) {
		t.Fatalf("a start without the policy: %v", err)
	}
	if _, err := s.SetRecordingPolicy(ctx, Caller{TokenID: "tok-other"}, r.RoomID, true); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another token set the policy: %v", err)
	}
	if _, err := s.SetRecordingPolicy(ctx, owner, r.RoomID, true); err != nil {
		t.Fatal(err)
	}
	join := func(role string) string {
		j, err := s.Join(ctx, r.RoomID, JoinRequest{AccessTicket: mustTicket(t, s, r, TicketRequest{SubjectIssuer: "crm", SubjectID: role, Role: role,
			Capabilities: []string{CapCameraPublish, CapMicrophonePublish}})})
		if err != nil {
			t.Fatal(err)
		}
		return j.Token
	}
	host, member := join(RoleHost), join(RoleMember)
	if _, err := s.StartRecordingAsHost(ctx, r.RoomID, member); !errors.Is(err, ErrForbidden) {
		t.Fatalf("a member started the recording: %v", err)
	}
	first, err := s.StartRecordingAsHost(ctx, r.RoomID, host)
	if err != nil || first.State != RecordingRecording {
		t.Fatalf("the host's start: %+v %v", first, err)
	}
	again, err := s.StartRecording(ctx, owner, r.RoomID)
	if err != nil || again.RecordingID != first.RecordingID {
		t.Fatalf("a second start answered %+v %v, want the running recording", again, err)
	}
	// A publication that goes Active while recording is recorded.
	pub, err := s.CreatePublication(ctx, r.RoomID, member, PublicationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, kv, err := s.publication(ctx, r.RoomID, pub.PublicationID)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.setPublication(ctx, pub, kv, PublicationActive, "sess", "rtc.publication.started"); err != nil {
		t.Fatal(err)
	}
	if err := s.recordPublication(ctx, pub); err != nil {
		t.Fatal(err)
	}
	if !rec.recording[streamName(r.RoomID, pub.PublicationID)] {
		t.Fatal("the new publication is not recorded")
	}
	cur, err := s.CurrentRecordingAsParticipant(ctx, r.RoomID, member)
	if err != nil || cur == nil || len(cur.Publications) != 1 || len(cur.Participants) != 1 {
		t.Fatalf("current: %+v %v", cur, err)
	}
	if _, err := s.StopRecordingAsHost(ctx, r.RoomID, member, first.RecordingID); !errors.Is(err, ErrForbidden) {
		t.Fatalf("a member stopped the recording: %v", err)
	}
	rec.unsealed = true
	stopping, err := s.StopRecording(ctx, owner, r.RoomID, first.RecordingID)
	if err != nil || stopping.State != RecordingStopping {
		t.Fatalf("an unconfirmed stop: %+v %v", stopping, err)
	}
	rec.unsealed = false
	if _, _, err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	runs, err := s.Recordings(ctx, owner, r.RoomID)
	if err != nil || len(runs) != 1 || runs[0].State != RecordingStopped || runs[0].StoppedAt == nil {
		t.Fatalf("runs after the sweep: %+v %v", runs, err)
	}
	if cur, err := s.CurrentRecording(ctx, owner, r.RoomID); err != nil || cur != nil {
		t.Fatalf("current after stop: %+v %v", cur, err)
	}
	rec.fail = errors.New("disk full")
	if _, err := s.StartRecording(ctx, owner, r.RoomID); !errors.Is(err, ErrMediaUnavailable) {
		t.Fatalf("a failing recorder: %v", err)
	}
	if cur, err := s.CurrentRecording(ctx, owner, r.RoomID); err != nil || cur != nil {
		t.Fatalf("a failed start still holds the room: %+v %v", cur, err)
	}
	rec.fail = nil
	if retry, err := s.StartRecording(ctx, owner, r.RoomID); err != nil || retry.State != RecordingRecording {
		t.Fatalf("a retry after a failed start: %+v %v", retry, err)
	}
	evs := outbox(t, s)
	failed := 0
	for _, ev := range evs {
		if ev.EventName == "rtc.recording.failed" {
			failed++
			if strings.Contains(string(ev.Data), "disk") {
				t.Fatalf("rtc.recording.failed carries the error text: %s", ev.Data)
			}
		}
	}
	if failed != 1 {
		t.Fatalf("%d rtc.recording.failed events, want 1", failed)
	}
}
