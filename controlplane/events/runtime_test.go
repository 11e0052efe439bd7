package events

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
)

func emitTxn(t *testing.T, s store.Store, names ...string) []Envelope {
	t.Helper()
	var ops []store.Op
	var out []Envelope
	for _, n := range names {
		ev, err := New(n, SourceMedia, "n1", map[string]any{"name": n, "password": "p"})
		if err != nil {
			t.Fatal(err)
		}
		op, _ := Op(ev)
		ops = append(ops, op)
		out = append(out, ev)
	}
	if _, err := s.Txn(context.Background(), store.TxnRequest{Then: ops}); err != nil {
		t.Fatal(err)
	}
	return out
}

func next(t *testing.T, rs *RuntimeStream) RuntimeMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := rs.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRuntimeStreamResumesWithoutGaps: events arrive numbered 1, 2, 3 …
// filtered by permission; a stream resumed from the cursor of any message
// (even in the middle of a multi-event Txn) continues exactly after it.
func TestRuntimeStreamResumesWithoutGaps(t *testing.T) {
	node := openNode(t)
	svc := &Service{Store: node, Reader: node.State(), NodeID: "n1"}
	ctx := context.Background()
	viewer := func(p string) bool { return p == "nodes.view" || p == "streams.view" }
	rs, hello, err := svc.OpenRuntime(ctx, viewer, "")
	if err != nil {
		t.Fatal(err)
	}
	if hello.Type != MsgHello || hello.Seq != 0 || *hello.Resumed || hello.Protocol != RuntimeProtocol {
		t.Fatalf("hello = %+v", hello)
	}
	a := emitTxn(t, node, MediaServerStarted, MediaStreamOnline) // one Txn, two events
	emitTxn(t, node, RecordingFileCompleted)                     // not visible: recordings.view
	d := emitTxn(t, node, MediaServerStopped)
	var got []RuntimeMessage
	for range 3 {
		got = append(got, next(t, rs))
	}
	rs.Close()
	want := []string{a[0].EventID, a[1].EventID, d[0].EventID}
	for i, m := range got {
		if m.Type != MsgEvent || m.Seq != int64(i+1) || m.Event.EventID != want[i] || string(m.Event.Data) == "" {
			t.Fatalf("message %d = %+v", i, m)
		}
		if string(Redact(m.Event.Data)) != string(m.Event.Data) || !contains(string(m.Event.Data), Redacted) {
			t.Fatalf("message %d data not redacted: %s", i, m.Event.Data)
		}
	}
	// Disconnected: more happens meanwhile.
	later := emitTxn(t, node, MediaStreamOffline, MediaServerRecovered)
	rs2, hello2, err := svc.OpenRuntime(ctx, viewer, got[0].Cursor)
	if err != nil {
		t.Fatal(err)
	}
	defer rs2.Close()
	if !*hello2.Resumed || hello2.Seq != 1 {
		t.Fatalf("resumed hello = %+v", hello2)
	}
	wantIDs := []string{a[1].EventID, d[0].EventID, later[0].EventID, later[1].EventID}
	for i, id := range wantIDs {
		m := next(t, rs2)
		if m.Type != MsgEvent || m.Seq != int64(i+2) || m.Event.EventID != id {
			t.Fatalf("resumed message %d = %+v, want seq %d event %s", i, m, i+2, id)
		}
	}
	if _, _, err := svc.OpenRuntime(ctx, viewer, "1.2"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("malformed cursor: %v", err)
	}
}

// TestRuntimeStreamResyncsAfterCompaction: a cursor whose history is gone
// gets a resync, and numbering starts again at 1.
func TestRuntimeStreamResyncsAfterCompaction(t *testing.T) {
	node := openNode(t)
	svc := &Service{Store: node, Reader: node.State(), NodeID: "n1"}
	ctx := context.Background()
	all := func(string) bool { return true }
	rs, _, err := svc.OpenRuntime(ctx, all, "")
	if err != nil {
		t.Fatal(err)
	}
	emitTxn(t, node, MediaServerStarted)
	first := next(t, rs)
	rs.Close()
	for range 3 {
		emitTxn(t, node, MediaServerStopped)
	}
	if _, err := node.Compact(ctx, node.Revision()); err != nil {
		t.Fatal(err)
	}
	rs2, _, err := svc.OpenRuntime(ctx, all, first.Cursor)
	if err != nil {
		t.Fatal(err)
	}
	defer rs2.Close()
	if m := next(t, rs2); m.Type != MsgResync || m.Seq != 0 || m.Reason == "" {
		t.Fatalf("after compaction got %+v, want resync", m)
	}
	ev := emitTxn(t, node, MediaServerRecovered)
	if m := next(t, rs2); m.Type != MsgEvent || m.Seq != 1 || m.Event.EventID != ev[0].EventID {
		t.Fatalf("after resync got %+v", m)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
