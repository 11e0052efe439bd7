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
	if err != nil || s.MediaState != MediaReleased || s.PTT || s.ReleaseReason != "control node gone left the cluster"+countsNote(nil) ||
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

// TestRecordedStateOutlivesTheNode: a real sender sends; each time its
// push-to-talk gate closes its counts reach the record, and when its node
// is then gone the record answers those counts, with a reason that says
// as of when. A session its node released keeps its own end: the node
// being gone later changes nothing, and EndNode does not count it.
func TestRecordedStateOutlivesTheNode(t *testing.T) {
	st := storetest.SingleNode(t)
	ctx := context.Background()
	c, n, _ := device(t)
	s := &Service{BindIP: "127.0.0.1", NodeID: "holder"}
	s.Record = func(sess Session) {
		if err := RecordState(ctx, st, sess, time.Now()); err != nil {
			t.Errorf("recording %s: %v", sess.SessionID, err)
		}
	}
	t.Cleanup(s.Close)
	create := func() *Session {
		sess, err := s.Create(ctx, "gb28181", "dev", "ch", true, establish(c.LocalAddr().String(), 8))
		if err != nil {
			t.Fatal(err)
		}
		if err := PutOwner(ctx, st, sess, "holder"); err != nil {
			t.Fatal(err)
		}
		return sess
	}
	talking, released := create(), create()

	// Ten packets, then the gate closes.
	if _, err := s.Write(talking.SessionID, make([]byte, 10*frameBytes)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for n.Load() < 10 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	closed, err := s.SetPTT(talking.SessionID, false)
	if err != nil || closed.PacketsSent != 10 || n.Load() != 10 {
		t.Fatalf("after ten packets: %+v (%d at the device), %v", closed, n.Load(), err)
	}
	// A stale snapshot (fewer packets) does not overwrite the record.
	if err := RecordState(ctx, st, *talking, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReleaseMedia(released.SessionID); err != nil {
		t.Fatal(err)
	}
	if o, err := GetOwner(ctx, st, talking.SessionID); err != nil || o.Ended || o.CountedAt == nil || o.Session.PacketsSent != 10 ||
		o.Session.BytesSent != 10*frameBytes || o.Session.MediaState != MediaSending || o.Session.PTT {
		t.Fatalf("the talking session's record: %+v %+v, %v", o, o.Session, err)
	}

	// The node is gone: only the session it had not released is ended,
	// with the counts it recorded and a reason saying as of when.
	if n, err := EndNode(ctx, st, "holder", "control node holder is gone", time.Now()); err != nil || n != 1 {
		t.Fatalf("EndNode: %d, %v", n, err)
	}
	o, err := GetOwner(ctx, st, talking.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := o.EndedSession(false)
	if got.MediaState != MediaReleased || got.PacketsSent != 10 || got.BytesSent != 10*frameBytes ||
		got.ReleaseReason != "control node holder is gone"+countsNote(o.CountedAt) {
		t.Fatalf("the talking session after its node is gone: %+v", got)
	}
	o, err = GetOwner(ctx, st, released.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = o.EndedSession(false)
	if !o.Ended || got.MediaState != MediaReleased || got.ReleaseReason != "released through the API" || got.ReleasedAt == nil {
		t.Fatalf("the released session after its node is gone: %+v", got)
	}
}
