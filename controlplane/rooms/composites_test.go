package rooms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/store/storetest"
)

// renderer stands in for the engine's composite pool (the end-to-end
// test runs ffmpeg on the engine): it refuses while refuse is set and
// keeps the requests it got.
type renderer struct {
	mu     sync.Mutex
	refuse bool
	got    map[string]ComposeRequest
}

func (r *renderer) Compose(_ context.Context, _ string, req ComposeRequest) (bool, int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got[req.CompositeID] = req
	if r.refuse {
		return false, 0, fmt.Errorf("%w: ffmpeg exited 1", ErrComposeRefused)
	}
	return true, 1234, nil
}

func (r *renderer) CompositeURL(_ context.Context, _, id, action string) (string, error) {
	return "engine:" + action + ":" + id, nil
}

// TestComposites: a recording's stop plans a member copy per participant
// and the full meeting (once); the worker renders them from the track
// files at their offsets; a refused render Fails, a retry of anything
// else is refused, a retried one becomes Available and is then read as a
// file of the recording with the ticket's action.
func TestComposites(t *testing.T) {
	node := storetest.SingleNode(t, Index, RecordingIndex, CompositeIndex)
	clk := &clock{t: time.Now().UTC().Truncate(time.Millisecond)}
	rend := &renderer{refuse: true, got: map[string]ComposeRequest{}}
	arch := streamArchive{files: map[string][]TrackFile{}}
	held := map[string]bool{"rtc.recordings.view": true, "rtc.recordings.play": true, "rtc.recordings.download": true}
	s := &Service{Store: node, Reader: node.State(), NodeID: "cp1", Now: clk.now, Recorder: &streamRecorder{recording: map[string]bool{}},
		Archive: arch, Composer: rend, MACKeys: [][]byte{[]byte("archive-test-key-0123456789abcdef")},
		Issuer: func(_ context.Context, cred, perm string) (bool, error) {
			return cred == owner.TokenID && held[perm], nil
		}}
	ctx := context.Background()
	r := mustRoom(t, s, CreateRequest{Name: "Board", MediaServerID: "media-1"})
	if _, err := s.SetRecordingPolicy(ctx, owner, r.RoomID, true); err != nil {
		t.Fatal(err)
	}
	var pubs []*Publication
	var tokens []string
	for _, who := range []string{"a", "b"} {
		j, err := s.Join(ctx, r.RoomID, JoinRequest{AccessTicket: mustTicket(t, s, r, TicketRequest{SubjectIssuer: "crm", SubjectID: who, Role: RoleMember,
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
		if err := s.setPublication(ctx, pub, kv, PublicationActive, "sess-"+who, "rtc.publication.started"); err != nil {
			t.Fatal(err)
		}
		pubs = append(pubs, pub)
		tokens = append(tokens, j.Token)
	}
	rec, err := s.startRecording(ctx, r.RoomID, "test")
	if err != nil {
		t.Fatal(err)
	}
	origin := rec.OriginAt
	arch.files[streamName(r.RoomID, pubs[0].PublicationID)] = []TrackFile{
		{FileID: "0190f5a4-6a2b-7c3d-8e4f-0000000000a1", Start: origin.Add(-200 * time.Millisecond), DurationMs: 3000, Codecs: []string{"H264", "opus"}},
		{FileID: "0190f5a4-6a2b-7c3d-8e4f-0000000000a2", Start: origin.Add(6 * time.Second), DurationMs: 4000, Codecs: []string{"opus"}}}
	arch.files[streamName(r.RoomID, pubs[1].PublicationID)] = []TrackFile{
		{FileID: "0190f5a4-6a2b-7c3d-8e4f-0000000000b1", Start: origin.Add(time.Second), DurationMs: 9000, Codecs: []string{"VP8"}}}
	clk.add(10 * time.Second)
	if _, err := s.StopRecording(ctx, owner, r.RoomID, rec.RecordingID); err != nil {
		t.Fatal(err)
	}
	// A second stop plans nothing more.
	if _, err := s.StopRecording(ctx, owner, r.RoomID, rec.RecordingID); err != nil {
		t.Fatal(err)
	}
	view, err := s.IssueArchiveTicket(ctx, owner, func(p string) bool { return held[p] }, r.RoomID, []string{ActionPlay}, 60)
	if err != nil {
		t.Fatal(err)
	}
	manifest := func() []Composite {
		t.Helper()
		m, err := s.RecordingManifest(ctx, r.RoomID, view.Token, rec.RecordingID, 0)
		if err != nil {
			t.Fatal(err)
		}
		return m.Composites
	}
	cs := manifest()
	if len(cs) != 3 {
		t.Fatalf("composites %+v; want two member copies and the meeting", cs)
	}
	kinds := map[string]int{}
	for _, c := range cs {
		kinds[c.Kind]++
		if c.State != CompositePending || c.DurationMs != 10000 {
			t.Fatalf("a planned composite: %+v", c)
		}
	}
	if kinds[CompositeMember] != 2 || kinds[CompositeMeeting] != 1 {
		t.Fatalf("kinds %v", kinds)
	}
	if err := s.composeOnce(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range manifest() {
		if c.State != CompositeFailed || c.LastError == "" || c.Attempts != 1 {
			t.Fatalf("a refused render: %+v", c)
		}
		req := rend.got[c.CompositeID]
		switch c.Kind {
		case CompositeMeeting:
			if len(req.Lanes) != 2 || len(req.Lanes[0]) != 2 || req.Lanes[0][0].OffsetMs != -200 || !req.Lanes[0][0].Video || !req.Lanes[0][0].Audio ||
				req.Lanes[0][1].OffsetMs != 6000 || req.Lanes[0][1].Video || req.Lanes[1][0].OffsetMs != 1000 || req.Lanes[1][0].Audio {
				t.Fatalf("the meeting's lanes: %+v", req.Lanes)
			}
		case CompositeMember:
			if len(req.Lanes) != 1 || req.DurationMs != 10000 {
				t.Fatalf("a member copy's lanes: %+v", req)
			}
		}
	}
	if _, err := s.RecordingFileURL(ctx, r.RoomID, view.Token, rec.RecordingID, cs[0].CompositeID, ActionPlay); !errors.Is(err, ErrRecordingNotFound) {
		t.Fatalf("a Failed composite read: %v", err)
	}
	if _, err := s.RetryComposite(ctx, Caller{TokenID: "tok-other"}, r.RoomID, rec.RecordingID, cs[0].CompositeID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another token's retry: %v", err)
	}
	rend.mu.Lock()
	rend.refuse = false
	rend.mu.Unlock()
	again, err := s.RetryComposite(ctx, owner, r.RoomID, rec.RecordingID, cs[0].CompositeID)
	if err != nil || again.State != CompositePending || again.LastError != "" {
		t.Fatalf("retry: %+v %v", again, err)
	}
	if err := s.composeOnce(ctx); err != nil {
		t.Fatal(err)
	}
	got, _, err := s.composite(ctx, r.RoomID, rec.RecordingID, cs[0].CompositeID)
	if err != nil || got.State != CompositeAvailable || got.FileSize != 1234 || got.CompletedAt == nil {
		t.Fatalf("after the retry: %+v %v", got, err)
	}
	if _, err := s.RetryComposite(ctx, owner, r.RoomID, rec.RecordingID, cs[0].CompositeID); !errors.Is(err, ErrCompositeNotFailed) {
		t.Fatalf("a retry of an Available composite: %v", err)
	}
	if ok, err := s.CompositeAvailable(ctx, cs[0].CompositeID); !ok || err != nil {
		t.Fatalf("available: %v %v", ok, err)
	}
	if ok, _ := s.CompositeAvailable(ctx, cs[1].CompositeID); ok {
		t.Fatal("a Failed composite is available")
	}
	u, err := s.RecordingFileURL(ctx, r.RoomID, view.Token, rec.RecordingID, cs[0].CompositeID, ActionPlay)
	if err != nil || u != "engine:play:"+cs[0].CompositeID {
		t.Fatalf("the composite's URL: %q %v", u, err)
	}
	if _, err := s.RecordingFileURL(ctx, r.RoomID, view.Token, rec.RecordingID, cs[0].CompositeID, ActionDownload); !errors.Is(err, ErrArchiveTicketInvalid) {
		t.Fatalf("a download with a play ticket: %v", err)
	}

	checkPackage(t, s, r.RoomID, rec.RecordingID, held, tokens[0], cs[0])
}

// checkPackage: the package needs download and holds the track files
// once each and the Available composites; the timeline attachment shows
// a track's gap; the runs open with a view ticket of the room only; the
// session manifest opens with a participant token.
func checkPackage(t *testing.T, s *Service, room RoomID, recordingID string, held map[string]bool, token string, avail Composite) {
	t.Helper()
	ctx := context.Background()
	issue := func(actions ...string) string {
		tk, err := s.IssueArchiveTicket(ctx, owner, func(p string) bool { return held[p] }, room, actions, 60)
		if err != nil {
			t.Fatal(err)
		}
		return tk.Token
	}
	view, dl := issue(ActionView), issue(ActionDownload)
	if _, err := s.RecordingPackage(ctx, room, view, recordingID); !errors.Is(err, ErrArchiveTicketInvalid) {
		t.Fatalf("a package with a view ticket: %v", err)
	}
	p, err := s.RecordingPackage(ctx, room, dl, recordingID)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range p.Files {
		names = append(names, f.Name)
	}
	if len(p.Files) != 4 || p.Files[3].Name != "composites/member-"+string(avail.ParticipantID)+".mp4" && p.Files[3].Name != "composites/meeting.mp4" ||
		p.Files[3].URL != "engine:download:"+avail.CompositeID {
		t.Fatalf("package files %v", names)
	}
	if _, err := s.RecordingAttachment(ctx, room, view, recordingID, AttachmentTimeline, ActionDownload); !errors.Is(err, ErrArchiveTicketInvalid) {
		t.Fatalf("an attachment download with a view ticket: %v", err)
	}
	if _, err := s.RecordingAttachment(ctx, room, view, recordingID, "chat", ActionView); !errors.Is(err, ErrAttachmentNotFound) {
		t.Fatalf("an unknown attachment: %v", err)
	}
	a, err := s.RecordingAttachment(ctx, room, view, recordingID, AttachmentTimeline, ActionView)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tracks []struct {
			MediaKind string
			Media     [][2]int64 `json:"mediaMilliseconds"`
			Gaps      [][2]int64 `json:"gapMilliseconds"`
		}
	}
	if err := json.Unmarshal(a.Body, &doc); err != nil {
		t.Fatal(err)
	}
	gaps := 0
	for _, tr := range doc.Tracks {
		for _, g := range tr.Gaps {
			if tr.MediaKind != KindAudio || g != [2]int64{2800, 6000} {
				t.Fatalf("timeline %s", a.Body)
			}
			gaps++
		}
	}
	if gaps != 1 {
		t.Fatalf("timeline %s", a.Body)
	}
	runs, total, err := s.RecordingRunsWithTicket(ctx, room, view, 1, 10)
	if err != nil || total != 1 || runs[0].RecordingID != recordingID {
		t.Fatalf("runs %+v %d %v", runs, total, err)
	}
	other := mustRoom(t, s, CreateRequest{Name: "Other", MediaServerID: "media-1"})
	if _, _, err := s.RecordingRunsWithTicket(ctx, other.RoomID, view, 1, 10); !errors.Is(err, ErrArchiveTicketInvalid) {
		t.Fatalf("another room's runs: %v", err)
	}
	if _, err := s.SessionManifest(ctx, room, view); !errors.Is(err, ErrTokenInvalid) {
		t.Fatalf("an archive ticket as a participant token: %v", err)
	}
	m, err := s.SessionManifest(ctx, room, token)
	if err != nil || m.Recording.RecordingID != recordingID || len(m.Composites) != 3 {
		t.Fatalf("session manifest %+v %v", m, err)
	}
}
