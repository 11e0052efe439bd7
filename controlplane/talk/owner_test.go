package talk

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/store/storetest"
)

// TestEndNodeRecordsTheEndOfItsSessions: the sessions of a node that is
// gone read Released with the reason from their record, audio and
// push-to-talk are refused with it; another node's session and a second
// EndNode change nothing.
func TestEndNodeRecordsTheEndOfItsSessions(t *testing.T) {
	st := storetest.SingleNode(t)
	ctx := context.Background()
	created := time.Now().UTC().Add(-time.Minute)
	for id, node := range map[string]string{"s1": "gone", "s2": "alive"} {
		s := &Session{SessionID: id, Protocol: "gb28181", DeviceID: "dev", Codec: CodecPCMA, MediaState: MediaSending, PTT: true, CreatedAt: created}
		if err := PutOwner(ctx, st, s, node); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	if n, err := EndNode(ctx, st, "gone", "control node gone left the cluster", now); err != nil || n != 1 {
		t.Fatalf("EndNode: %d, %v", n, err)
	}
	if n, err := EndNode(ctx, st, "gone", "again", now.Add(time.Minute)); err != nil || n != 0 {
		t.Fatalf("a second EndNode: %d, %v", n, err)
	}
	o, err := GetOwner(ctx, st, "s1")
	if err != nil || !o.Ended {
		t.Fatalf("s1: %+v, %v", o, err)
	}
	s, err := o.EndedSession(false)
	if err != nil || s.MediaState != MediaReleased || s.PTT || s.ReleaseReason != "control node gone left the cluster" ||
		s.ReleasedAt == nil || !s.ReleasedAt.Equal(now.UTC()) || s.Codec != CodecPCMA || !s.CreatedAt.Equal(created) {
		t.Fatalf("s1 read: %+v, %v", s, err)
	}
	if _, err := o.EndedSession(true); !errors.Is(err, ErrNotSending) {
		t.Fatalf("s1 write: %v", err)
	}
	if o, err := GetOwner(ctx, st, "s2"); err != nil || o.Ended || o.Session.MediaState != MediaSending {
		t.Fatalf("s2: %+v, %v", o, err)
	}
	if _, err := GetOwner(ctx, st, "s3"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("s3: %v", err)
	}
}
