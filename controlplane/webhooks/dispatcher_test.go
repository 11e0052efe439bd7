package webhooks

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/store"
)

const secretA = "a-secret-of-plan-A-0123456789"

// TestRetriesWithBackoffUntilDelivered: the receiver fails three times and
// then accepts; four attempts, one eventId, four distinct valid signatures,
// and every wait within the backoff bounds, with time moved by hand.
func TestRetriesWithBackoffUntilDelivered(t *testing.T) {
	clock := newManualClock()
	e := newEnv(t, clock)
	rcv := newReceiver(t, secretA, clock.Now, func(n int) int {
		if n < 3 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	p := e.plan("crm", rcv.url, secretA, 5, "media.server.*")
	ev := e.emit(events.MediaServerStarted, map[string]any{"NodeId": "n1", "mediaServerId": "ms-1"})
	for attempt := 1; attempt <= 3; attempt++ {
		rcv.waitCount(attempt)
		d := e.waitDelivery(ev.EventID, p.ID, "WaitingRetry", func(d *Delivery) bool { return d.State == StateWaitingRetry && d.Attempts == attempt })
		if d.LastHTTPStatus == nil || *d.LastHTTPStatus != 500 || !strings.HasPrefix(d.ErrorSummary, "HTTP 500") {
			t.Fatalf("after attempt %d: %+v", attempt, d)
		}
		wait := d.NextAttemptAt.Sub(*d.LastAttemptAt)
		nominal := BackoffBase << (attempt - 1)
		lo, hi := time.Duration(float64(nominal)*(1-Jitter)), time.Duration(float64(nominal)*(1+Jitter))
		if wait < lo || wait > hi {
			t.Fatalf("wait after attempt %d = %s, want within [%s, %s]", attempt, wait, lo, hi)
		}
		// Not a moment early: one millisecond before, nothing is sent.
		e.advance(d.NextAttemptAt.Add(-time.Millisecond))
		e.advance(*d.NextAttemptAt)
	}
	got := rcv.waitCount(4)
	d := e.waitDelivery(ev.EventID, p.ID, "Completed", inState(StateCompleted))
	if d.Attempts != 4 || *d.LastHTTPStatus != 200 || d.ErrorSummary != "" || len(d.Log) != 4 {
		t.Fatalf("completed delivery = %+v", d)
	}
	sigs := map[string]bool{}
	for _, r := range got {
		if r.EventID != ev.EventID || r.EventName != events.MediaServerStarted || r.Subscription != string(p.ID) {
			t.Fatalf("attempt %+v is not the event %s for plan %s", r, ev.EventID, p.ID)
		}
		sigs[r.Signature] = true
	}
	if len(got) != 4 || len(sigs) != 4 {
		t.Fatalf("%d attempts with %d distinct signatures, want 4 and 4", len(got), len(sigs))
	}
	for i := 1; i < len(got); i++ {
		if got[i].Timestamp <= got[i-1].Timestamp {
			t.Fatalf("attempt %d reused timestamp %d", i, got[i].Timestamp)
		}
	}
}

// TestExhaustedThenOperatorRetry: the last allowed failure makes the
// delivery Failed; nothing more happens until an operator retries.
func TestExhaustedThenOperatorRetry(t *testing.T) {
	clock := newManualClock()
	e := newEnv(t, clock)
	healthy := false
	rcv := newReceiver(t, secretA, clock.Now, func(n int) int {
		if healthy {
			return http.StatusNoContent
		}
		return http.StatusServiceUnavailable
	})
	p := e.plan("erp", rcv.url, secretA, 2, "media.*")
	ev := e.emit(events.MediaStreamOnline, map[string]any{"App": "live", "streamId": "cam1", "online": true})
	rcv.waitCount(1)
	d := e.waitDelivery(ev.EventID, p.ID, "WaitingRetry", inState(StateWaitingRetry))
	e.advance(*d.NextAttemptAt)
	rcv.waitCount(2)
	d = e.waitDelivery(ev.EventID, p.ID, "Failed", inState(StateFailed))
	if d.Attempts != 2 || d.NextAttemptAt != nil {
		t.Fatalf("failed delivery = %+v", d)
	}
	if _, err := e.svc.Retry(context.Background(), testActor, d.ID+"x"); err == nil {
		t.Fatal("retry of an unknown delivery succeeded")
	}
	healthy = true
	if _, err := e.svc.Retry(context.Background(), testActor, d.ID); err != nil {
		t.Fatal(err)
	}
	rcv.waitCount(3)
	d = e.waitDelivery(ev.EventID, p.ID, "Completed", inState(StateCompleted))
	if d.Attempts != 3 || *d.LastHTTPStatus != 204 {
		t.Fatalf("retried delivery = %+v", d)
	}
	if _, err := e.svc.Retry(context.Background(), testActor, d.ID); err == nil {
		t.Fatal("a Completed delivery was retried")
	}
}

// TestArchiveCancelsWaitingRetry: archiving a plan while its delivery
// waits cancels it, and nothing more is sent even when the retry falls due.
func TestArchiveCancelsWaitingRetry(t *testing.T) {
	clock := newManualClock()
	e := newEnv(t, clock)
	failing := newReceiver(t, secretA, clock.Now, func(int) int { return http.StatusBadGateway })
	healthy := newReceiver(t, secretA, clock.Now, nil)
	doomed := e.plan("doomed", failing.url, secretA, 5, "recording.*")
	e.plan("witness", healthy.url, secretA, 5, "media.server.*")
	ev := e.emit(events.RecordingFileCompleted, map[string]any{"fileName": "a.mp4"})
	failing.waitCount(1)
	d := e.waitDelivery(ev.EventID, doomed.ID, "WaitingRetry", inState(StateWaitingRetry))
	if _, err := e.svc.Archive(context.Background(), testActor, doomed.ID); err != nil {
		t.Fatal(err)
	}
	c := e.waitDelivery(ev.EventID, doomed.ID, "Canceled", inState(StateCanceled))
	if c.Attempts != 1 {
		t.Fatalf("canceled delivery = %+v", c)
	}
	// The retry falls due; a later event to another plan proves the
	// dispatcher has looked since.
	e.advance(d.NextAttemptAt.Add(time.Minute))
	witness := e.emit(events.MediaServerStopped, map[string]any{"NodeId": "n1"})
	healthy.waitCount(1)
	if got := healthy.received(); got[0].EventID != witness.EventID {
		t.Fatalf("witness got %+v", got)
	}
	if n := len(failing.received()); n != 1 {
		t.Fatalf("archived plan's receiver got %d requests, want 1", n)
	}
	if _, err := e.svc.Archive(context.Background(), testActor, doomed.ID); err == nil {
		t.Fatal("archiving twice succeeded")
	}
	if _, err := e.svc.Update(context.Background(), testActor, doomed.ID, PlanInput{Name: "doomed", Endpoint: failing.url, AllowHTTP: true,
		Enabled: true, Events: []string{"media.*"}, TimeoutSeconds: 5, MaxAttempts: 1}); err == nil {
		t.Fatal("an archived plan was updated")
	}
	// Its name is free again, its history is kept.
	e.plan("doomed", healthy.url, secretA, 1, "media.*")
	list, total, err := e.svc.ListDeliveries(context.Background(), DeliveryQuery{Plan: doomed.ID, Page: 1, PageSize: 10})
	if err != nil || total != 1 || list[0].State != StateCanceled {
		t.Fatalf("history of the archived plan = %+v, %d, %v", list, total, err)
	}
}

// TestPlansAreIndependent: one event, two plans with their own secrets;
// one Completed while the other waits, neither touching the other.
func TestPlansAreIndependent(t *testing.T) {
	clock := newManualClock()
	e := newEnv(t, clock)
	const secretB = "another-secret-for-plan-B"
	okRcv := newReceiver(t, secretA, clock.Now, nil)
	badRcv := newReceiver(t, secretB, clock.Now, func(int) int { return http.StatusInternalServerError })
	pa := e.plan("a", okRcv.url, secretA, 3, "media.server.started")
	pb := e.plan("b", badRcv.url, secretB, 3, "media.*")
	ev := e.emit(events.MediaServerStarted, map[string]any{"NodeId": "n1"})
	a := e.waitDelivery(ev.EventID, pa.ID, "Completed", inState(StateCompleted))
	b := e.waitDelivery(ev.EventID, pb.ID, "WaitingRetry", inState(StateWaitingRetry))
	if a.ID == b.ID || a.Attempts != 1 || b.Attempts != 1 || *b.LastHTTPStatus != 500 || a.ErrorSummary != "" {
		t.Fatalf("deliveries a=%+v b=%+v", a, b)
	}
	ga, gb := okRcv.received(), badRcv.received()
	if ga[0].EventID != gb[0].EventID || ga[0].Signature == gb[0].Signature {
		t.Fatalf("same event must reach both plans with different signatures: %+v %+v", ga[0], gb[0])
	}
	// b's retry succeeds later; a stays as it was.
	e.advance(*b.NextAttemptAt)
	badRcv.waitCount(2)
	e.waitDelivery(ev.EventID, pb.ID, "WaitingRetry again", func(d *Delivery) bool { return d.Attempts == 2 && d.State == StateWaitingRetry })
	again := e.waitDelivery(ev.EventID, pa.ID, "unchanged", inState(StateCompleted))
	if !again.UpdatedAt.Equal(a.UpdatedAt) || len(okRcv.received()) != 1 {
		t.Fatalf("plan a's delivery changed: %+v", again)
	}
}

// TestTestEventGoesToTheSelectedPlanOnly: a test event skips the plan's
// scope, reaches only that plan, and is disabled-plan safe.
func TestTestEventGoesToTheSelectedPlanOnly(t *testing.T) {
	clock := newManualClock()
	e := newEnv(t, clock)
	r1 := newReceiver(t, secretA, clock.Now, nil)
	r2 := newReceiver(t, secretA, clock.Now, nil)
	p1 := e.plan("one", r1.url, secretA, 1, "recording.*")
	e.plan("two", r2.url, secretA, 1, "system.webhook.*")
	entry, d, err := e.svc.Test(context.Background(), testActor, p1.ID, "hello receiver")
	if err != nil {
		t.Fatal(err)
	}
	got := r1.waitCount(1)
	e.waitDelivery(entry.EventID, p1.ID, "Completed", inState(StateCompleted))
	var body struct {
		Source string
		Data   map[string]string
	}
	json.Unmarshal(got[0].Body, &body)
	if got[0].EventName != events.SystemWebhookTest || body.Source != "outbound-webhook-test" || body.Data["message"] != "hello receiver" ||
		body.Data["actor"] != "test:tester" || body.Data["testedAtUtc"] == "" || d.ID != NewDeliveryID(entry.EventID, p1.ID) {
		t.Fatalf("test event = %s", got[0].Body)
	}
	// A later event proves the fan-out has passed the test event.
	e.emit(events.RecordingFileCompleted, map[string]any{"fileName": "x.mp4"})
	r1.waitCount(2)
	if n := len(r2.received()); n != 0 {
		t.Fatalf("the other plan got %d requests", n)
	}
}

// TestRedactionBeforeSending: listed property names are redacted at any
// depth, but not inside RawJson text.
func TestRedactionBeforeSending(t *testing.T) {
	clock := newManualClock()
	e := newEnv(t, clock)
	rcv := newReceiver(t, secretA, clock.Now, nil)
	e.plan("r", rcv.url, secretA, 1, "engine.webhook.*")
	raw := `{"app":"live","stream":"cam","params":"token=abc","password":"hunter2"}`
	ev, err := events.New(events.EngineWebhookPrefix+"OnPlay", events.SourceEngine, "n1", map[string]any{
		"HookName": "OnPlay", "RawJson": raw, "Nested": map[string]any{"apiKey": "k", "keep": "v", "List": []any{map[string]any{"Cookie": "c"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	op, _ := events.Op(ev)
	if _, err := e.node.Txn(context.Background(), storeTxn(op)); err != nil {
		t.Fatal(err)
	}
	got := rcv.waitCount(1)
	var body struct {
		Data struct {
			RawJson string
			Nested  struct {
				APIKey string `json:"apiKey"`
				Keep   string `json:"keep"`
				List   []map[string]string
			}
		}
	}
	if err := json.Unmarshal(got[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	n := body.Data.Nested
	if body.Data.RawJson != raw || n.APIKey != "[REDACTED]" || n.Keep != "v" || n.List[0]["Cookie"] != "[REDACTED]" {
		t.Fatalf("sent data = %s", got[0].Body)
	}
}

// TestIdleFanoutMovesTheCursorOncePerSecond: outbox entries no plan takes
// move the fan-out cursor at most once a second, not once per batch, and a
// plan created later takes only the events committed after it.
func TestIdleFanoutMovesTheCursorOncePerSecond(t *testing.T) {
	clock := newManualClock()
	e := newEnv(t, clock)
	ctx := context.Background()
	revisionOf := func(ev events.Envelope) int64 {
		kv, _, err := store.Get(ctx, e.node, events.OutboxPrefix+ev.EventID, store.Local)
		if err != nil || kv == nil {
			t.Fatalf("outbox entry of %s: %v", ev.EventID, err)
		}
		return kv.ModRevision
	}
	waitCursor := func(atLeast int64) int64 {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			cur, _, err := readCursor(ctx, e.node)
			if err == nil && cur >= atLeast {
				return cur
			}
			if time.Now().After(deadline) {
				t.Fatalf("cursor %d never reached %d (%v)", cur, atLeast, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	first := e.emit(events.MediaServerStarted, map[string]any{"NodeId": "n1"})
	at := waitCursor(revisionOf(first))
	var quiet []events.Envelope
	for i := 0; i < 5; i++ {
		quiet = append(quiet, e.emit(events.MediaServerStarted, map[string]any{"NodeId": "n1"}))
		time.Sleep(20 * time.Millisecond) // separate fan-out batches
	}
	time.Sleep(200 * time.Millisecond)
	if cur, _, _ := readCursor(ctx, e.node); cur != at {
		t.Fatalf("the cursor moved from %d to %d within a second with nothing delivered", at, cur)
	}
	clock.Set(clock.Now().Add(idleCursorEvery))
	last := e.emit(events.MediaServerStarted, map[string]any{"NodeId": "n1"})
	waitCursor(revisionOf(last))

	rcv := newReceiver(t, secretA, clock.Now, nil)
	p := e.plan("after", rcv.url, secretA, 3, "media.*")
	ev := e.emit(events.MediaServerStarted, map[string]any{"NodeId": "n1"})
	e.waitDelivery(ev.EventID, p.ID, "Completed", inState(StateCompleted))
	for _, old := range append(quiet, first, last) {
		if d, _, err := e.svc.GetDelivery(ctx, NewDeliveryID(old.EventID, p.ID)); err == nil && d != nil {
			t.Fatalf("event %s from before the plan was delivered to it", old.EventID)
		}
	}
}
