package rooms

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/store/storetest"
)

// streamArchive stands in for the recording index (the end-to-end test
// reads the real one): the files of each stream.
type streamArchive struct{ files map[string][]TrackFile }

func (a streamArchive) StreamFiles(_ context.Context, _, stream string, _, _ time.Time) ([]TrackFile, error) {
	return a.files[stream], nil
}

func (a streamArchive) FileURL(_ context.Context, fileID, action string) (string, error) {
	return "engine:" + action + ":" + fileID, nil
}

// TestRecordingListAndTrackFiles: the listing shows a business caller its
// own rooms' recordings and a ticket its room's, filtered (state, start
// closed-open, participant, device session, search) before the count; a
// track's file opens only with the action asked for, only while the
// recording is not Stopping, and only if it is the recording's.
func TestRecordingListAndTrackFiles(t *testing.T) {
	node := storetest.SingleNode(t, Index, RecordingIndex)
	clk := &clock{t: time.Now().UTC().Truncate(time.Millisecond)}
	rec := &streamRecorder{recording: map[string]bool{}}
	arch := streamArchive{files: map[string][]TrackFile{}}
	held := map[string]bool{"rtc.recordings.view": true, "rtc.recordings.play": true, "rtc.recordings.download": true}
	s := &Service{Store: node, Reader: node.State(), NodeID: "cp1", Now: clk.now, Recorder: rec, Archive: arch,
		MACKeys: [][]byte{[]byte("archive-test-key-0123456789abcdef")},
		Issuer: func(_ context.Context, cred, perm string) (bool, error) {
			return cred == owner.TokenID && held[perm], nil
		}}
	ctx := context.Background()
	board := mustRoom(t, s, CreateRequest{Name: "Board", MediaServerID: "media-1"})
	other := mustRoom(t, s, CreateRequest{Name: "Standup", MediaServerID: "media-1"})
	foreign, _, err := s.CreateRoom(ctx, Caller{TokenID: "tok-other"}, CreateRequest{Name: "Board too", MediaServerID: "media-1"})
	if err != nil {
		t.Fatal(err)
	}
	record := func(r *Room, c Caller) (*Recording, string) {
		t.Helper()
		if _, err := s.SetRecordingPolicy(ctx, c, r.RoomID, true); err != nil {
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
		started, err := s.startRecording(ctx, r.RoomID, "test")
		if err != nil {
			t.Fatal(err)
		}
		arch.files[streamName(r.RoomID, pub.PublicationID)] = []TrackFile{{FileID: "file-" + pub.PublicationID, Start: clk.now(), DurationMs: 1000,
			Codecs: []string{"H264", "Opus"}}}
		clk.add(time.Minute)
		return started, pub.PublicationID
	}
	first, firstPub := record(board, owner)
	rec.unsealed = true
	second, _ := record(other, owner)
	if _, err := s.StopRecording(ctx, owner, other.RoomID, second.RecordingID); err != nil {
		t.Fatal(err)
	}
	// Another token's room, recorded without publications.
	if _, err := s.SetRecordingPolicy(ctx, Caller{TokenID: "tok-other"}, foreign.RoomID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.startRecording(ctx, foreign.RoomID, "test"); err != nil {
		t.Fatal(err)
	}

	list := func(c Caller, f RecordingFilter) []string {
		t.Helper()
		f.Page, f.PageSize = 1, 10
		got, total, err := s.ListRecordings(ctx, c, f)
		if err != nil || int(total) != len(got) {
			t.Fatalf("list %+v: %d of %d, %v", f, len(got), total, err)
		}
		var ids []string
		for _, r := range got {
			ids = append(ids, r.RecordingID)
		}
		return ids
	}
	if ids := list(owner, RecordingFilter{}); len(ids) != 2 || ids[0] != second.RecordingID || ids[1] != first.RecordingID {
		t.Fatalf("the owner's recordings, newest first: %v", ids)
	}
	if ids := list(Caller{TokenID: "tok-x", Super: true}, RecordingFilter{Search: "board"}); len(ids) != 2 {
		t.Fatalf("a super administrator's search for board: %v", ids)
	}
	from, to := first.OriginAt, second.OriginAt
	for name, c := range map[string]struct {
		f    RecordingFilter
		want string
	}{
		"state":          {RecordingFilter{State: RecordingStopping}, second.RecordingID},
		"closed-open":    {RecordingFilter{From: &from, To: &to}, first.RecordingID},
		"participant":    {RecordingFilter{ParticipantID: string(first.Participants[0])}, first.RecordingID},
		"device session": {RecordingFilter{DeviceSessionID: firstPub}, first.RecordingID},
		"room":           {RecordingFilter{RoomID: other.RoomID}, second.RecordingID},
		"search":         {RecordingFilter{Search: "STAND"}, second.RecordingID},
	} {
		if ids := list(owner, c.f); len(ids) != 1 || ids[0] != c.want {
			t.Fatalf("%s: %v", name, ids)
		}
	}
	if _, _, err := s.ListRecordings(ctx, owner, RecordingFilter{Page: 1, PageSize: 101}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("pageSize 101: %v", err)
	}

	view, err := s.IssueArchiveTicket(ctx, owner, func(p string) bool { return held[p] }, board.RoomID, []string{ActionPlay}, 60)
	if err != nil {
		t.Fatal(err)
	}
	got, total, err := s.ListRecordingsWithTicket(ctx, view.Token, RecordingFilter{Page: 1, PageSize: 10})
	if err != nil || total != 1 || got[0].RecordingID != first.RecordingID {
		t.Fatalf("the ticket's room: %+v %d %v", got, total, err)
	}
	if _, _, err := s.ListRecordingsWithTicket(ctx, "rtc.participant", RecordingFilter{Page: 1, PageSize: 10}); !errors.Is(err, ErrArchiveTicketInvalid) {
		t.Fatalf("a participant token lists: %v", err)
	}

	// The board's recording still runs (Recording): its file plays with a
	// play ticket; download needs a download ticket.
	fileID := "file-" + firstPub
	if u, err := s.RecordingFileURL(ctx, board.RoomID, view.Token, first.RecordingID, fileID, ActionPlay); err != nil || u != "engine:play:"+fileID {
		t.Fatalf("play: %q %v", u, err)
	}
	if _, err := s.RecordingFileURL(ctx, board.RoomID, view.Token, first.RecordingID, fileID, ActionDownload); !errors.Is(err, ErrArchiveTicketInvalid) {
		t.Fatalf("download with a play ticket: %v", err)
	}
	if _, err := s.RecordingFileURL(ctx, board.RoomID, view.Token, first.RecordingID, "file-elsewhere", ActionPlay); !errors.Is(err, ErrRecordingNotFound) {
		t.Fatalf("a file of no track: %v", err)
	}
	dl, err := s.IssueArchiveTicket(ctx, owner, func(p string) bool { return held[p] }, other.RoomID, []string{ActionDownload}, 60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordingFileURL(ctx, other.RoomID, dl.Token, second.RecordingID, "x", ActionDownload); !errors.Is(err, ErrRecordingNotReady) {
		t.Fatalf("a download while Stopping: %v", err)
	}
}
