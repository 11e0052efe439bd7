package rooms

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/store/storetest"
)

// TestArchiveTickets: an issuer cannot grant what it lacks; the ticket
// opens only its room and its actions, only while it lives, and only
// while its issuer still holds the permission (rechecked at every use);
// a participant token is no archive ticket.
func TestArchiveTickets(t *testing.T) {
	node := storetest.SingleNode(t, Index)
	clk := &clock{t: time.Now().UTC()}
	held := map[string]bool{"rtc.recordings.view": true, "rtc.recordings.play": true}
	s := &Service{Store: node, Reader: node.State(), NodeID: "cp1", Now: clk.now, MACKeys: [][]byte{[]byte("archive-test-key-0123456789abcdef")},
		Issuer: func(_ context.Context, cred, perm string) (bool, error) {
			return cred == owner.TokenID && held[perm], nil
		}}
	ctx := context.Background()
	r := mustRoom(t, s, CreateRequest{Name: "Archive"})
	other := mustRoom(t, s, CreateRequest{Name: "Other"})
	has := func(p string) bool { return held[p] }
	if _, err := s.IssueArchiveTicket(ctx, owner, has, r.RoomID, []string{ActionDownload}, 0); !errors.Is(err, ErrForbidden) {
		t.Fatalf("granting download without it: %v", err)
	}
	if _, err := s.IssueArchiveTicket(ctx, Caller{TokenID: "tok-other"}, has, r.RoomID, nil, 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another token's room: %v", err)
	}
	if _, err := s.IssueArchiveTicket(ctx, owner, has, r.RoomID, nil, 601); !errors.Is(err, ErrInvalid) {
		t.Fatalf("lifetime 601: %v", err)
	}
	play, err := s.IssueArchiveTicket(ctx, owner, has, r.RoomID, []string{ActionPlay}, 30)
	if err != nil || strings.Join(play.Actions, ",") != "view,play" {
		t.Fatalf("play ticket: %+v %v", play, err)
	}
	if _, err := s.checkArchive(ctx, r.RoomID, play.Token, ActionView); err != nil {
		t.Fatalf("view with a play ticket: %v", err)
	}
	for name, c := range map[string]struct {
		room   RoomID
		ticket string
		action string
	}{
		"download":       {r.RoomID, play.Token, ActionDownload},
		"another room":   {other.RoomID, play.Token, ActionView},
		"tampered":       {r.RoomID, play.Token[:len(play.Token)-2] + "AA", ActionView},
		"widened":        {r.RoomID, strings.Replace(play.Token, "view+play", "view+play+download", 1), ActionDownload},
		"a participant":  {r.RoomID, "rtc.0190f5a4-6a2b-7c3d-8e4f-5a6b7c8d9e0f.c2VjcmV0", ActionView},
		"an access card": {r.RoomID, "rat_abc", ActionView},
	} {
		if _, err := s.checkArchive(ctx, c.room, c.ticket, c.action); !errors.Is(err, ErrArchiveTicketInvalid) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	held["rtc.recordings.play"] = false
	if _, err := s.checkArchive(ctx, r.RoomID, play.Token, ActionPlay); !errors.Is(err, ErrArchiveTicketInvalid) {
		t.Fatalf("play after the issuer lost rtc.recordings.play: %v", err)
	}
	if _, err := s.checkArchive(ctx, r.RoomID, play.Token, ActionView); err != nil {
		t.Fatalf("view, which the issuer still holds: %v", err)
	}
	clk.add(31 * time.Second)
	if _, err := s.checkArchive(ctx, r.RoomID, play.Token, ActionView); !errors.Is(err, ErrArchiveTicketInvalid) {
		t.Fatalf("an expired ticket: %v", err)
	}
}
