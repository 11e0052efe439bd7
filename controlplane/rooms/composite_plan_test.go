package rooms

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/storetest"
	"github.com/svcplatform/svc/test/testkit"
)

// refusePlans is a real store whose Txns that write composites fail while
// refusing is set: the plan's write failing after the recording stopped.
type refusePlans struct {
	store.Store
	refusing atomic.Bool
	refused  atomic.Int64
}

var errInjected = errors.New("injected: the store refused the write")

func (f *refusePlans) Txn(ctx context.Context, req store.TxnRequest) (*store.TxnResponse, error) {
	if f.refusing.Load() {
		for _, op := range req.Then {
			if strings.HasPrefix(op.Key, compositesPrefix) {
				f.refused.Add(1)
				return nil, errInjected
			}
		}
	}
	return f.Store.Txn(ctx, req)
}

// TestCompositesPlannedAfterAFailedPlan: when the plan's write fails after
// the recording stopped, the stop reports it and the recording is Stopped
// with nothing planned; the leader's composite worker plans it once the
// store takes writes again (once: further passes and a repeated stop add
// nothing), and renders what it planned.
func TestCompositesPlannedAfterAFailedPlan(t *testing.T) {
	node := storetest.SingleNode(t, Index, RecordingIndex, CompositeIndex)
	st := &refusePlans{Store: node}
	clk := &clock{t: time.Now().UTC().Truncate(time.Millisecond)}
	rend := &renderer{got: map[string]ComposeRequest{}}
	arch := streamArchive{files: map[string][]TrackFile{}}
	s := &Service{Store: st, Reader: node.State(), NodeID: "cp1", Now: clk.now, Recorder: &streamRecorder{recording: map[string]bool{}},
		Archive: arch, Composer: rend}
	ctx := context.Background()
	r := mustRoom(t, s, CreateRequest{Name: "Board", MediaServerID: "media-1"})
	if _, err := s.SetRecordingPolicy(ctx, owner, r.RoomID, true); err != nil {
		t.Fatal(err)
	}
	j, err := s.Join(ctx, r.RoomID, JoinRequest{AccessTicket: mustTicket(t, s, r, TicketRequest{SubjectIssuer: "crm", SubjectID: "a", Role: RoleMember,
		Capabilities: []string{CapCameraPublish, CapMicrophonePublish}})})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := s.CreatePublication(ctx, r.RoomID, j.Token, PublicationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, kv, err := s.publication(ctx, r.RoomID, pub.PublicationID)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.setPublication(ctx, pub, kv, PublicationActive, "sess-a", "rtc.publication.started"); err != nil {
		t.Fatal(err)
	}
	rec, err := s.startRecording(ctx, r.RoomID, "test")
	if err != nil {
		t.Fatal(err)
	}
	arch.files[streamName(r.RoomID, pub.PublicationID)] = []TrackFile{
		{FileID: "0190f5a4-6a2b-7c3d-8e4f-0000000000c1", Start: rec.OriginAt.Add(time.Second), DurationMs: 8000, Codecs: []string{"H264", "opus"}}}
	clk.add(10 * time.Second)

	st.refusing.Store(true)
	if _, err := s.StopRecording(ctx, owner, r.RoomID, rec.RecordingID); !errors.Is(err, errInjected) {
		t.Fatalf("a stop whose plan could not be written: %v", err)
	}
	stopped, err := s.recording(ctx, r.RoomID, rec.RecordingID)
	if err != nil || stopped.State != RecordingStopped || stopped.CompositesPlanned {
		t.Fatalf("after the failed plan: %+v %v", stopped, err)
	}
	// While the store still refuses, the worker's pass fails and plans
	// nothing.
	if err := s.composeOnce(ctx); !errors.Is(err, errInjected) {
		t.Fatalf("a pass while the store refuses: %v", err)
	}
	if cs, err := s.composites(ctx, r.RoomID, rec.RecordingID); err != nil || len(cs) != 0 {
		t.Fatalf("composites while the store refuses: %+v %v", cs, err)
	}
	st.refusing.Store(false)

	loopCtx, cancel := context.WithCancel(ctx)
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		s.RunComposites(loopCtx, 50*time.Millisecond, func(err error) { t.Errorf("composite worker: %v", err) })
	}()
	defer func() { cancel(); <-loopDone }()
	testkit.Eventually(t, 30*time.Second, "the worker to plan and render the member copy and the meeting", func() bool {
		cs, err := s.composites(ctx, r.RoomID, rec.RecordingID)
		if err != nil || len(cs) != 2 {
			return false
		}
		for _, c := range cs {
			if c.State != CompositeAvailable {
				return false
			}
		}
		return true
	})
	// A repeated stop and later passes plan nothing more.
	if again, err := s.StopRecording(ctx, owner, r.RoomID, rec.RecordingID); err != nil || again.Active() {
		t.Fatalf("a repeated stop: %+v %v", again, err)
	}
	if err := s.composeOnce(ctx); err != nil {
		t.Fatal(err)
	}
	cs, err := s.composites(ctx, r.RoomID, rec.RecordingID)
	if err != nil || len(cs) != 2 || cs[0].Kind == cs[1].Kind || cs[0].DurationMs != 10000 {
		t.Fatalf("composites after the plan: %+v %v", cs, err)
	}
	if got, err := s.recording(ctx, r.RoomID, rec.RecordingID); err != nil || !got.CompositesPlanned {
		t.Fatalf("the recording after the plan: %+v %v", got, err)
	}
	if st.refused.Load() < 2 {
		t.Fatalf("the plan's write was refused %d times, want the stop's and the pass's", st.refused.Load())
	}
}
