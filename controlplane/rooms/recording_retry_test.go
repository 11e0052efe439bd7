package rooms

import (
	"context"
	"errors"
	"testing"

	"github.com/svcplatform/svc/controlplane/store/storetest"
)

// TestTrackRetries: a publication whose recorder failed to start when it
// went Active, and one whose recording failed on the media server later,
// are both started again by the sweep while the recording runs (counted
// in trackRetries); the recording stays Recording throughout.
func TestTrackRetries(t *testing.T) {
	node := storetest.SingleNode(t, Index)
	rec := &streamRecorder{recording: map[string]bool{}, broken: map[string]bool{}}
	s := &Service{Store: node, Reader: node.State(), NodeID: "cp1", Recorder: rec}
	ctx := context.Background()
	r := mustRoom(t, s, CreateRequest{Name: "Board", MediaServerID: "media-1"})
	if _, err := s.SetRecordingPolicy(ctx, owner, r.RoomID, true); err != nil {
		t.Fatal(err)
	}
	j, err := s.Join(ctx, r.RoomID, JoinRequest{AccessTicket: mustTicket(t, s, r, TicketRequest{SubjectIssuer: "crm", SubjectID: "m", Role: RoleMember,
		Capabilities: []string{CapCameraPublish, CapMicrophonePublish}})})
	if err != nil {
		t.Fatal(err)
	}
	started, err := s.StartRecording(ctx, owner, r.RoomID)
	if err != nil || started.State != RecordingRecording {
		t.Fatalf("start: %+v %v", started, err)
	}
	activate := func() *Publication {
		t.Helper()
		pub, err := s.CreatePublication(ctx, r.RoomID, j.Token, PublicationRequest{})
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
		return pub
	}
	// The first publication's recorder fails as it goes Active.
	rec.fail = errors.New("engine busy")
	first := activate()
	if err := s.recordPublication(ctx, first); err == nil {
		t.Fatal("the failing recorder started")
	}
	rec.fail = nil
	second := activate()
	if err := s.recordPublication(ctx, second); err != nil {
		t.Fatal(err)
	}
	// The second's recording fails later on the media server.
	rec.broken[streamName(r.RoomID, second.PublicationID)] = true
	startsBefore := rec.starts
	if _, _, err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	cur, err := s.CurrentRecording(ctx, owner, r.RoomID)
	if err != nil || cur.State != RecordingRecording || cur.TrackRetries != 2 || len(cur.Publications) != 2 || rec.starts != startsBefore+2 {
		t.Fatalf("after the sweep: %+v (%d starts) %v", cur, rec.starts-startsBefore, err)
	}
	if !rec.recording[streamName(r.RoomID, first.PublicationID)] || rec.broken[streamName(r.RoomID, second.PublicationID)] {
		t.Fatalf("recording %v, broken %v", rec.recording, rec.broken)
	}
	// Nothing more to retry: a second sweep starts nothing.
	if _, _, err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if rec.starts != startsBefore+2 {
		t.Fatalf("a sweep with nothing failed started %d recorders", rec.starts-startsBefore-2)
	}
}
