package webhooks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/store"
)

// TestRetentionKeepsUndeliveredEvents: delivered events past the window go
// with their deliveries; an event still waiting for a retry stays.
func TestRetentionKeepsUndeliveredEvents(t *testing.T) {
	clock := newManualClock()
	e := newEnv(t, clock)
	ctx := context.Background()
	okRcv := newReceiver(t, secretA, clock.Now, nil)
	badRcv := newReceiver(t, secretA, clock.Now, func(int) int { return http.StatusInternalServerError })
	good := e.plan("good", okRcv.url, secretA, 3, "media.server.*")
	bad := e.plan("bad", badRcv.url, secretA, 3, "recording.*")
	delivered := e.emit(events.MediaServerStarted, map[string]any{"NodeId": "n1"})
	waiting := e.emit(events.RecordingFileCompleted, map[string]any{"fileName": "a.mp4"})
	e.waitDelivery(delivered.EventID, good.ID, "Completed", inState(StateCompleted))
	w := e.waitDelivery(waiting.EventID, bad.ID, "WaitingRetry", inState(StateWaitingRetry))
	keep := Retention{MaxAge: time.Hour, MaxEntries: 1000}
	// Inside the window nothing goes. Event ids carry the wall-clock time
	// they were made at, so the window is measured against that.
	e.svc.Clock = fixedClock{time.Now()}
	if n, err := e.svc.PruneOutbox(ctx, keep, 100); err != nil || n != 0 {
		t.Fatalf("inside the window: %d removed, %v", n, err)
	}
	e.svc.Clock = fixedClock{time.Now().Add(2 * time.Hour)}
	if n, err := e.svc.PruneOutbox(ctx, keep, 100); err != nil || n != 1 {
		t.Fatalf("past the window: %d removed, %v", n, err)
	}
	if _, err := events.Get(ctx, e.node, delivered.EventID); err == nil {
		t.Fatal("the delivered event is still there")
	}
	if _, _, err := e.svc.GetDelivery(ctx, NewDeliveryID(delivered.EventID, good.ID)); err == nil {
		t.Fatal("the delivered event's delivery is still there")
	}
	if _, err := events.Get(ctx, e.node, waiting.EventID); err != nil {
		t.Fatalf("the event waiting for a retry was removed: %v", err)
	}
	// Once it fails for good it is settled, and the count bound removes it.
	e.advance(*w.NextAttemptAt)
	w = e.waitDelivery(waiting.EventID, bad.ID, "WaitingRetry 2", func(d *Delivery) bool { return d.Attempts == 2 && d.State == StateWaitingRetry })
	e.advance(*w.NextAttemptAt)
	e.waitDelivery(waiting.EventID, bad.ID, "Failed", inState(StateFailed))
	e.svc.Clock = fixedClock{time.Now()}
	for i := 0; i < 3; i++ {
		ev := e.emit(events.MediaServerStopped, map[string]any{"i": i})
		e.waitDelivery(ev.EventID, good.ID, "Completed", inState(StateCompleted))
	}
	if n, err := e.svc.PruneOutbox(ctx, Retention{MaxAge: time.Hour, MaxEntries: 3}, 100); err != nil || n != 1 {
		t.Fatalf("count bound: %d removed, %v", n, err)
	}
	if _, err := events.Get(ctx, e.node, waiting.EventID); err == nil {
		t.Fatal("the oldest settled event beyond the count bound is still there")
	}
	resp, _ := e.node.Range(ctx, events.OutboxPrefix, store.RangeOptions{End: store.PrefixEnd(events.OutboxPrefix), CountOnly: true})
	if resp.Count != 3 {
		t.Fatalf("%d events kept, want 3", resp.Count)
	}
}

// TestSlowReceiverDoesNotHoldUpOtherPlans: a receiver that does not answer
// holds only its own plan's slots.
func TestSlowReceiverDoesNotHoldUpOtherPlans(t *testing.T) {
	clock := newManualClock()
	e := newEnvWith(t, clock, func(d *Dispatcher) { d.PerPlan, d.MaxInFlight = 4, 16 })
	// The stuck receiver never answers; it counts the POSTs open at once.
	// A POST the dispatcher gave up on (its timeout passed on a loaded
	// machine) closes its connection and no longer holds a slot, and its
	// retry may come once the test moves the clock for the fast plan.
	var open, most atomic.Int64
	release := make(chan struct{})
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		n := open.Add(1)
		defer open.Add(-1)
		for m := most.Load(); n > m; m = most.Load() {
			if most.CompareAndSwap(m, n) {
				break
			}
		}
		select {
		case <-release:
		case <-req.Context().Done():
		}
	}))
	defer stuck.Close()
	defer close(release)
	fast := newReceiver(t, secretA, clock.Now, nil)
	e.plan("stuck", stuck.URL+"/hooks/svc", secretA, 1, "media.*")
	fastPlan := e.plan("fast", fast.url, secretA, 3, "media.*")
	for i := 0; i < 40; i++ {
		e.emit(events.MediaStreamOnline, map[string]any{"i": i})
	}
	// On a loaded machine a POST can fail for a moment; its retry is due
	// only when the clock moves, so move it when the fast plan waits.
	deadline := time.Now().Add(30 * time.Second)
	for len(fast.received()) < 40 {
		if time.Now().After(deadline) {
			t.Fatalf("the fast plan got %d of 40 deliveries", len(fast.received()))
		}
		select {
		case <-fast.notify:
		case <-time.After(200 * time.Millisecond):
			waiting, _, _ := e.svc.ListDeliveries(context.Background(), DeliveryQuery{Plan: fastPlan.ID, State: StateWaitingRetry, Page: 1, PageSize: 50})
			for _, d := range waiting {
				t.Logf("retrying %s after: %s", d.ID, d.ErrorSummary)
				e.advance(*d.NextAttemptAt)
			}
		}
	}
	if n := most.Load(); n > 4 {
		t.Fatalf("the stuck plan had %d POSTs open at once, more than its 4 slots", n)
	}
}

// fixedClock is a Clock stopped at one time.
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time                       { return c.t }
func (c fixedClock) After(time.Duration) <-chan time.Time { return make(chan time.Time) }

// TestOrphanedClaimIsTakenOver: a claim a deposed leader got through and
// never answered is taken over once it is older than the grace period.
func TestOrphanedClaimIsTakenOver(t *testing.T) {
	clock := newManualClock()
	e := newEnv(t, clock)
	rcv := newReceiver(t, secretA, clock.Now, nil)
	p := e.plan("orphan", rcv.url, secretA, 1, "media.*")
	env, err := events.New(events.SystemWebhookTest, events.SourceWebhookTest, "old", map[string]string{"message": "orphan"})
	if err != nil {
		t.Fatal(err)
	}
	entry := events.Entry{Envelope: env, TargetSubscriptionID: string(p.ID)}
	d := newDelivery(entry, p.ID, clock.Now(), true)
	d.State, d.Attempts, d.DueMs = StateDelivering, 1, 0
	d.Claim = &Claim{NodeID: "old", Session: "deposed", At: clock.Now()}
	evOp, _ := events.EntryOp(entry)
	dOp, _ := d.put()
	if _, err := e.node.Txn(context.Background(), storeTxn(evOp, dOp)); err != nil {
		t.Fatal(err)
	}
	// The claim loop sweeps once a grace period has passed since its last
	// sweep; two steps of a grace period each make sure one falls after
	// the orphan's claim however the loop's start and these steps interleave.
	for running, _ := e.disp.Running(); !running; running, _ = e.disp.Running() {
		time.Sleep(time.Millisecond)
	}
	e.advance(clock.Now().Add(orphanGrace + time.Second))
	e.advance(clock.Now().Add(orphanGrace + time.Second))
	rcv.waitCount(1)
	got := e.waitDelivery(env.EventID, p.ID, "Completed", inState(StateCompleted))
	// The interrupted POST counts (the contract counts POSTs made, and the
	// receiver may have had it), and is in the attempt log; the plan's
	// maximum of one did not stop the retry of an unknown outcome.
	if got.Attempts != 2 || got.Claim != nil || len(got.Log) != 2 || !strings.Contains(got.Log[0].Error, "interrupted") || got.Log[1].HTTPStatus == 0 {
		t.Fatalf("taken-over delivery = %+v, want two attempts: the interrupted one and the one that completed", got)
	}
}
