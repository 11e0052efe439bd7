package nodecommand

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
	"github.com/svcplatform/svc/controlplane/store/storetest"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/test/testkit"
)

// newService opens a real single-node store and a command service on it.
func newService(t *testing.T) (*Service, *raftnode.Node) {
	t.Helper()
	n := storetest.SingleNode(t, Index)
	s := &Service{Store: n, Reader: n.State(), LocalNodeID: "cp1", Visibility: 300 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return s, n
}

var operator = audit.Actor{Type: "api-token", ID: "t1"}

func TestCommandLifecycle(t *testing.T) {
	s, _ := newService(t)
	ctx := t.Context()
	rec, created, err := s.Create(ctx, CreateRequest{NodeID: "m1", EngineNodeID: "m1", Type: agentapi.TypePing, IdempotencyKey: "k-1", Actor: operator})
	if err != nil || !created || rec.Status != Pending {
		t.Fatalf("create: %+v %v %v", rec, created, err)
	}
	again, created, err := s.Create(ctx, CreateRequest{NodeID: "m1", Type: agentapi.TypePing, IdempotencyKey: "k-1", Actor: operator})
	if err != nil || created || again.CommandID != rec.CommandID {
		t.Fatalf("same key created a second command: %+v %v %v", again, created, err)
	}
	// Another node's poll does not see it.
	if got, _ := s.Poll(ctx, "m2", 50*time.Millisecond, 10); len(got) != 0 {
		t.Fatalf("m2 got %+v", got)
	}
	got, err := s.Poll(ctx, "m1", time.Second, 10)
	if err != nil || len(got) != 1 || got[0].CommandID != rec.CommandID || got[0].Attempt != 1 || got[0].IdempotencyKey != "caller:k-1" {
		t.Fatalf("poll: %+v %v", got, err)
	}
	ack, err := s.Running(ctx, "m1", agentapi.CommandRunning{CommandID: rec.CommandID, Attempt: 1})
	if err != nil || ack.Canceled || ack.VisibleUntil.IsZero() {
		t.Fatalf("running: %+v %v", ack, err)
	}
	if _, err := s.Complete(ctx, "m2", agentapi.CommandResult{CommandID: rec.CommandID, Succeeded: true}); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("another node completed it: %v", err)
	}
	done, err := s.Complete(ctx, "m1", agentapi.CommandResult{CommandID: rec.CommandID, Attempt: 1, Succeeded: true, Result: json.RawMessage(`{"ok":true}`)})
	if err != nil || done.Status != Succeeded || string(done.Result) != `{"ok":true}` || done.StartedAt == nil || done.FinishedAt == nil {
		t.Fatalf("complete: %+v %v", done, err)
	}
	if _, err := s.Complete(ctx, "m1", agentapi.CommandResult{CommandID: rec.CommandID, Succeeded: true}); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("second result accepted: %v", err)
	}
	var statuses []string
	for _, h := range done.History {
		statuses = append(statuses, h.Status)
	}
	if len(statuses) != 4 || statuses[0] != Pending || statuses[1] != Dispatched || statuses[2] != Running || statuses[3] != Succeeded {
		t.Fatalf("history %v", statuses)
	}
}

func TestLongPollWakesOnCreate(t *testing.T) {
	s, _ := newService(t)
	ctx := t.Context()
	got := make(chan []agentapi.Command, 1)
	go func() {
		c, _ := s.Poll(ctx, "m1", 10*time.Second, 10)
		got <- c
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	rec, _, err := s.Create(ctx, CreateRequest{NodeID: "m1", Type: agentapi.TypePing, Actor: operator})
	if err != nil {
		t.Fatal(err)
	}
	c := <-got
	if len(c) != 1 || c[0].CommandID != rec.CommandID || time.Since(start) > time.Second {
		t.Fatalf("long poll answered %+v after %s", c, time.Since(start))
	}
	// A failed result needs an error; then it is stored.
	if _, err := s.Complete(ctx, "m1", agentapi.CommandResult{CommandID: rec.CommandID}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("failed result without error: %v", err)
	}
	r, err := s.Complete(ctx, "m1", agentapi.CommandResult{CommandID: rec.CommandID, Error: &agentapi.Error{Code: "engine_down", Message: "no engine"}})
	if err != nil || r.Status != Failed || r.Error.Code != "engine_down" {
		t.Fatalf("failed: %+v %v", r, err)
	}
}

func TestDeadlineHandsOutAgainThenTimesOut(t *testing.T) {
	s, _ := newService(t)
	clock := testkit.NewClock(time.Now())
	s.Now = clock.Now
	ctx := t.Context()
	rec, _, _ := s.Create(ctx, CreateRequest{NodeID: "m1", Type: agentapi.TypePing, MaxAttempts: 2, Actor: operator})
	if c, _ := s.Poll(ctx, "m1", time.Second, 1); len(c) != 1 {
		t.Fatal("not delivered")
	}
	// Before the visibility deadline nothing is handed out again.
	clock.Advance(200 * time.Millisecond)
	if rq, to, err := s.Reap(ctx); err != nil || rq != 0 || to != 0 {
		t.Fatalf("reap before the deadline: %d %d %v", rq, to, err)
	}
	// The agent vanishes: after the visibility deadline the reaper puts it
	// back, and the next poll gets attempt 2.
	clock.Advance(200 * time.Millisecond)
	rq, to, err := s.Reap(ctx)
	if err != nil || rq != 1 || to != 0 {
		t.Fatalf("reap: %d %d %v", rq, to, err)
	}
	c, _ := s.Poll(ctx, "m1", time.Second, 1)
	if len(c) != 1 || c[0].Attempt != 2 || c[0].CommandID != rec.CommandID {
		t.Fatalf("second delivery %+v", c)
	}
	clock.Advance(400 * time.Millisecond)
	if _, to, _ := s.Reap(ctx); to != 1 {
		t.Fatal("attempts exhausted but not timed out")
	}
	r, _ := s.Get(ctx, rec.CommandID)
	if r.Status != TimedOut || r.Error == nil {
		t.Fatalf("after exhaustion: %+v", r)
	}
}

func TestCancelAndWait(t *testing.T) {
	s, _ := newService(t)
	ctx := t.Context()
	rec, _, _ := s.Create(ctx, CreateRequest{NodeID: "m1", Type: agentapi.TypePing, Actor: operator})
	s.Poll(ctx, "m1", time.Second, 1)
	waited := make(chan *Record, 1)
	go func() {
		r, _ := s.Wait(ctx, rec.CommandID)
		waited <- r
	}()
	time.Sleep(50 * time.Millisecond)
	if _, err := s.Cancel(ctx, operator, rec.CommandID, "operator changed their mind"); err != nil {
		t.Fatal(err)
	}
	if r := <-waited; r.Status != Canceled {
		t.Fatalf("wait returned %+v", r)
	}
	ack, err := s.Running(ctx, "m1", agentapi.CommandRunning{CommandID: rec.CommandID, Attempt: 1})
	if err != nil || !ack.Canceled {
		t.Fatalf("agent not told of the cancellation: %+v %v", ack, err)
	}
	if _, err := s.Cancel(ctx, operator, rec.CommandID, ""); !errors.Is(err, ErrFinished) {
		t.Fatalf("second cancel: %v", err)
	}
}

func TestListFiltersAndStats(t *testing.T) {
	s, _ := newService(t)
	ctx := t.Context()
	for i := 0; i < 6; i++ {
		node, typ := "m1", agentapi.TypePing
		if i%2 == 1 {
			node, typ = "m2", agentapi.TypeEngineStatus
		}
		if _, _, err := s.Create(ctx, CreateRequest{NodeID: node, EngineNodeID: "e-" + node, Type: typ, Reason: "nightly check", Actor: operator}); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := s.Poll(ctx, "m1", time.Second, 1)
	s.Complete(ctx, "m1", agentapi.CommandResult{CommandID: got[0].CommandID, Error: &agentapi.Error{Code: "x", Message: "disk quota exceeded"}})
	from := time.Now().Add(-time.Hour)
	cases := []struct {
		name string
		f    Filter
		want int64
	}{
		{"all", Filter{}, 6},
		{"node", Filter{NodeID: "m1"}, 3},
		{"engine node", Filter{EngineNodeID: "e-m2"}, 3},
		{"status", Filter{Status: Pending}, 5},
		{"type", Filter{CommandType: agentapi.TypeEngineStatus}, 3},
		{"requested by", Filter{RequestedBy: "api-token:t1"}, 6},
		{"local only", Filter{LocalOnly: true}, 6},
		{"from", Filter{From: &from}, 6},
		{"since hours", Filter{SinceHours: 1}, 6},
		{"keyword in reason", Filter{Keyword: "NIGHTLY"}, 6},
		{"keyword in error", Filter{Keyword: "quota"}, 1},
		{"keyword with wildcard characters", Filter{Keyword: "%_"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rows, total, err := s.List(ctx, c.f, 1, 2)
			if err != nil || total != c.want || int64(len(rows)) != min(c.want, 2) {
				t.Fatalf("total %d rows %d err %v, want %d", total, len(rows), err, c.want)
			}
		})
	}
	if _, _, err := s.List(ctx, Filter{Status: "Exploded"}, 1, 10); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad status: %v", err)
	}
	st, err := s.Stats(ctx, Filter{})
	if err != nil || st.Total != 6 || st.ByStatus[Failed] != 1 || st.ByStatus[Pending] != 5 || st.ByCommandType[agentapi.TypePing] != 3 || st.OldestPendingMs <= 0 {
		t.Fatalf("stats %+v %v", st, err)
	}
}

// TestCreateAndWaitSeesAQuickResult: the waiter exists before the command,
// so a result stored at once is not missed, and a reused key waits for the
// first command.
func TestCreateAndWaitSeesAQuickResult(t *testing.T) {
	s, _ := newService(t)
	ctx := t.Context()
	go func() {
		for i := 0; i < 2; i++ {
			c, _ := s.Poll(ctx, "m1", 5*time.Second, 1)
			for _, cmd := range c {
				s.Complete(ctx, "m1", agentapi.CommandResult{CommandID: cmd.CommandID, Succeeded: true, Result: json.RawMessage(`{"n":1}`)})
			}
		}
	}()
	rec, created, err := s.CreateAndWait(ctx, CreateRequest{NodeID: "m1", Type: agentapi.TypePing, IdempotencyKey: "q", Actor: operator}, 5*time.Second)
	if err != nil || !created || rec.Status != Succeeded || string(rec.Result) != `{"n":1}` {
		t.Fatalf("%+v %v %v", rec, created, err)
	}
	again, created, err := s.CreateAndWait(ctx, CreateRequest{NodeID: "m1", Type: agentapi.TypePing, IdempotencyKey: "q", Actor: operator}, time.Second)
	if err != nil || created || again.CommandID != rec.CommandID || again.Status != Succeeded {
		t.Fatalf("reused key: %+v %v %v", again, created, err)
	}
	// Guards that do not hold refuse the creation.
	guard := []store.Compare{store.Absent(Prefix)}
	s.Store.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Put(Prefix, []byte("x"))}})
	if _, _, err := s.Create(ctx, CreateRequest{NodeID: "m1", Type: agentapi.TypePing, Guards: guard}); !errors.Is(err, ErrGuard) {
		t.Fatalf("guard: %v", err)
	}
}

// TestPollClaimsFromTheWatch: once a node's poll found nothing, commands
// for it are claimed from the watch's queue; one changed behind the
// queue's back makes the poll look at the store, and nothing is lost or
// handed out twice.
func TestPollClaimsFromTheWatch(t *testing.T) {
	s, _ := newService(t)
	ctx := t.Context()
	if c, _ := s.Poll(ctx, "m1", 20*time.Millisecond, 8); len(c) != 0 {
		t.Fatal("commands out of nowhere")
	}
	var ids []string
	for i := 0; i < 3; i++ {
		rec, _, _ := s.Create(ctx, CreateRequest{NodeID: "m1", Type: agentapi.TypePing, Actor: operator})
		ids = append(ids, rec.CommandID)
	}
	// One is canceled (it leaves the queue) and one changed out of band
	// (its queued copy is stale).
	s.Cancel(ctx, operator, ids[0], "")
	s.change(ctx, ids[1], func(r *Record) error { r.Reason = "edited"; return nil })
	time.Sleep(200 * time.Millisecond)
	got := map[string]int{}
	for i := 0; i < 3; i++ {
		c, err := s.Poll(ctx, "m1", 200*time.Millisecond, 8)
		if err != nil {
			t.Fatal(err)
		}
		for _, cmd := range c {
			got[cmd.CommandID]++
		}
	}
	if len(got) != 2 || got[ids[1]] != 1 || got[ids[2]] != 1 {
		t.Fatalf("handed out %v, want %s and %s once each", got, ids[1], ids[2])
	}
}

// TestPollBeforeRunStarts: a poll that looked at the store before the
// watch started still hears of a command created after its look.
func TestPollBeforeRunStarts(t *testing.T) {
	n := storetest.SingleNode(t, Index)
	s := &Service{Store: n, Reader: n.State(), LocalNodeID: "cp1", Visibility: 300 * time.Millisecond}
	ctx := t.Context()
	if got, err := s.Poll(ctx, "m1", 10*time.Millisecond, 1); err != nil || len(got) != 0 {
		t.Fatalf("first poll: %v %v", got, err)
	}
	rec, _, err := s.Create(ctx, CreateRequest{NodeID: "m1", Type: agentapi.TypePing, Actor: operator})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(runCtx) }()
	defer func() { cancel(); <-done }()
	got, err := s.Poll(ctx, "m1", 5*time.Second, 1)
	if err != nil || len(got) != 1 || got[0].CommandID != rec.CommandID {
		t.Fatalf("poll after a late Run: %v %v", got, err)
	}
}
