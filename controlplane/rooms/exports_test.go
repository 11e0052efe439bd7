package rooms

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/store/storetest"
)

// cutter stands in for the recording service's cut/merge (the end-to-end
// test runs the engine's): each cut's state as the test sets it.
type cutter struct {
	mu    sync.Mutex
	state map[string]string
	n     int
}

func (c *cutter) Cut(_ context.Context, _, stream string, _, _ time.Time) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	id := fmt.Sprintf("0190f5a4-6a2b-7c3d-8e4f-%012d", c.n)
	c.state[id] = CutPending
	return id, nil
}

func (c *cutter) CutState(_ context.Context, id string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state[id], nil
}

func (c *cutter) CutURL(_ context.Context, id, action string) (string, error) {
	return "engine:" + action + ":" + id, nil
}

func (c *cutter) set(id, st string) { c.mu.Lock(); c.state[id] = st; c.mu.Unlock() }

// TestFullExports: an export needs a Stopped recording and a range within
// it; its state follows its parts' cuts (Pending, Running, Failed,
// Available); a Failed one is retried by cutting its failed part again;
// only an Available one is read, with the ticket's action.
func TestFullExports(t *testing.T) {
	node := storetest.SingleNode(t, Index, RecordingIndex)
	clk := &clock{t: time.Now().UTC().Truncate(time.Millisecond)}
	cut := &cutter{state: map[string]string{}}
	held := map[string]bool{"rtc.recordings.view": true, "rtc.recordings.play": true, "rtc.recordings.download": true}
	s := &Service{Store: node, Reader: node.State(), NodeID: "cp1", Now: clk.now, Recorder: &streamRecorder{recording: map[string]bool{}},
		Archive: streamArchive{}, Exporter: cut, MACKeys: [][]byte{[]byte("archive-test-key-0123456789abcdef")},
		Issuer: func(_ context.Context, cred, perm string) (bool, error) {
			return cred == owner.TokenID && held[perm], nil
		}}
	ctx := context.Background()
	r := mustRoom(t, s, CreateRequest{Name: "Board", MediaServerID: "media-1"})
	if _, err := s.SetRecordingPolicy(ctx, owner, r.RoomID, true); err != nil {
		t.Fatal(err)
	}
	j, err := s.Join(ctx, r.RoomID, JoinRequest{AccessTicket: mustTicket(t, s, r, TicketRequest{SubjectIssuer: "crm", SubjectID: "p", Role: RoleMember,
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
	if err := s.setPublication(ctx, pub, kv, PublicationActive, "sess", "rtc.publication.started"); err != nil {
		t.Fatal(err)
	}
	rec, err := s.startRecording(ctx, r.RoomID, "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateExport(ctx, owner, r.RoomID, rec.RecordingID, 0, 1000); !errors.Is(err, ErrRecordingNotReady) {
		t.Fatalf("an export of a running recording: %v", err)
	}
	clk.add(10 * time.Second)
	if _, err := s.StopRecording(ctx, owner, r.RoomID, rec.RecordingID); err != nil {
		t.Fatal(err)
	}
	for _, rg := range [][2]int64{{-1, 1000}, {2000, 2000}, {0, 10001}} {
		if _, err := s.CreateExport(ctx, owner, r.RoomID, rec.RecordingID, rg[0], rg[1]); !errors.Is(err, ErrInvalid) {
			t.Fatalf("range %v: %v", rg, err)
		}
	}
	if _, err := s.CreateExport(ctx, Caller{TokenID: "tok-other"}, r.RoomID, rec.RecordingID, 0, 1000); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another token's export: %v", err)
	}
	x, err := s.CreateExport(ctx, owner, r.RoomID, rec.RecordingID, 1000, 4000)
	if err != nil || x.State != ExportPending || len(x.Parts) != 1 || x.Parts[0].PublicationID != pub.PublicationID {
		t.Fatalf("export: %+v %v", x, err)
	}
	play, err := s.IssueArchiveTicket(ctx, owner, func(p string) bool { return held[p] }, r.RoomID, []string{ActionPlay}, 60)
	if err != nil {
		t.Fatal(err)
	}
	state := func() string {
		t.Helper()
		all, err := s.Exports(ctx, r.RoomID, play.Token, rec.RecordingID)
		if err != nil || len(all) != 1 {
			t.Fatalf("exports: %+v %v", all, err)
		}
		return all[0].State
	}
	first := x.Parts[0].CutID
	cut.set(first, CutRunning)
	if st := state(); st != ExportRunning {
		t.Fatalf("a running cut: %s", st)
	}
	if _, _, err := s.ExportFiles(ctx, r.RoomID, play.Token, rec.RecordingID, x.ExportID, ActionPlay); !errors.Is(err, ErrExportNotAvailable) {
		t.Fatalf("a Running export read: %v", err)
	}
	if _, err := s.RetryExport(ctx, owner, r.RoomID, rec.RecordingID, x.ExportID); !errors.Is(err, ErrExportNotAvailable) {
		t.Fatalf("a retry of a Running export: %v", err)
	}
	cut.set(first, CutFailed)
	if st := state(); st != ExportFailed {
		t.Fatalf("a failed cut: %s", st)
	}
	again, err := s.RetryExport(ctx, owner, r.RoomID, rec.RecordingID, x.ExportID)
	if err != nil || again.State != ExportPending || again.Attempts != 2 || again.Parts[0].CutID == first {
		t.Fatalf("retry: %+v %v", again, err)
	}
	cut.set(again.Parts[0].CutID, CutSucceeded)
	if st := state(); st != ExportAvailable {
		t.Fatalf("a succeeded cut: %s", st)
	}
	_, files, err := s.ExportFiles(ctx, r.RoomID, play.Token, rec.RecordingID, x.ExportID, ActionPlay)
	if err != nil || len(files) != 1 || files[0].URL != "engine:play:"+again.Parts[0].CutID {
		t.Fatalf("the Available export's files: %+v %v", files, err)
	}
	if _, _, err := s.ExportFiles(ctx, r.RoomID, play.Token, rec.RecordingID, x.ExportID, ActionDownload); !errors.Is(err, ErrArchiveTicketInvalid) {
		t.Fatalf("a download with a play ticket: %v", err)
	}
}
