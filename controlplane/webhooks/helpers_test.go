package webhooks

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/events/eventstest"
	"github.com/svcplatform/svc/controlplane/keyring"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
)

// manualClock is a Clock the test moves by hand.
type manualClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

func newManualClock() *manualClock {
	return &manualClock{now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, waiter{at: c.now.Add(d), ch: ch})
	return ch
}

// Set moves the clock to t (never back) and fires due timers.
func (c *manualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

var testActor = audit.Actor{Type: "test", ID: "tester"}

// env is one real single-node store with the webhook service and a
// running dispatcher under the node's leadership handle.
type env struct {
	t     *testing.T
	node  *raftnode.Node
	keys  *keyring.Keyring
	clock *manualClock
	svc   *Service
	disp  *Dispatcher
}

func newEnv(t *testing.T, clock *manualClock) *env {
	t.Helper()
	return newEnvWith(t, clock, nil)
}

// newEnvWith lets a test adjust the dispatcher before it starts.
func newEnvWith(t *testing.T, clock *manualClock, tune func(*Dispatcher)) *env {
	t.Helper()
	node, keys := eventstest.OpenNode(t, events.OutboxIndex, DeliveryIndex, audit.Index)
	targets := &TargetGuard{AllowPrivate: true} // the receivers are on loopback
	e := &env{t: t, node: node, keys: keys, clock: clock}
	e.disp = &Dispatcher{Store: node, Reader: node.State(), Keys: keys, Targets: targets, NodeID: "n1", Clock: clock,
		Log: zaptest.NewLogger(t).Named("dispatcher"), Random: func() float64 { return 0.5 }}
	if tune != nil {
		tune(e.disp)
	}
	e.svc = &Service{Store: node, Reader: node.State(), Keys: keys, Targets: targets, NodeID: "n1", Clock: clock, Kick: e.disp.Kick}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); node.Leadership().Run(ctx, e.disp.Run) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return e
}

// advance moves the clock and wakes the dispatcher, as any change does;
// a wait it computed from the old time is then computed again.
func (e *env) advance(t time.Time) {
	e.clock.Set(t)
	e.disp.Kick()
}

// emit writes a standard event the way producers do: events.Op in a Txn.
func (e *env) emit(name string, data any) events.Envelope {
	e.t.Helper()
	ev, err := events.New(name, events.SourceMedia, "n1", data)
	if err != nil {
		e.t.Fatal(err)
	}
	op, err := events.Op(ev)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.node.Txn(context.Background(), store.TxnRequest{Then: []store.Op{op}}); err != nil {
		e.t.Fatal(err)
	}
	return ev
}

// plan creates a plan to url with the given scope and attempts.
func (e *env) plan(name, url, secret string, maxAttempts int, scope ...string) *Plan {
	e.t.Helper()
	p, err := e.svc.Create(context.Background(), testActor, PlanInput{Name: name, Endpoint: url, Secret: secret, Enabled: true,
		Events: scope, AllowHTTP: true, TimeoutSeconds: 5, MaxAttempts: maxAttempts})
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// waitDelivery polls the delivery of event for plan until cond holds.
func (e *env) waitDelivery(eventID string, plan PlanID, what string, cond func(*Delivery) bool) *Delivery {
	e.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		d, _, err := e.svc.GetDelivery(context.Background(), NewDeliveryID(eventID, plan))
		if err == nil && cond(d) {
			return d
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("delivery of %s to %s never became %s (last: %+v, err %v)", eventID, plan, what, d, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func inState(s State) func(*Delivery) bool { return func(d *Delivery) bool { return d.State == s } }

// received is one POST as the receiver verified it.
type received struct {
	EventID, EventName, Subscription, Signature string
	Timestamp                                   int64
	Body                                        []byte
}

// receiver is a real webhook receiver doing exactly what contract A asks
// of one: verify the raw body's signature in constant time before
// parsing, check the timestamp window and schemaVersion, check that the
// header event name and id match the body, then answer.
type receiver struct {
	t      *testing.T
	secret []byte
	now    func() time.Time
	url    string
	mu     sync.Mutex
	got    []received
	// answer decides the status of the n-th verified request (0-based).
	answer func(n int) int
	notify chan struct{}
}

func newReceiver(t *testing.T, secret string, now func() time.Time, answer func(n int) int) *receiver {
	r := &receiver{t: t, secret: []byte(secret), now: now, answer: answer, notify: make(chan struct{}, 1000)}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/hooks/svc"
	return r
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		http.Error(w, "method", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	tsText := req.Header.Get("X-Svc-Timestamp")
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil || r.now().Sub(time.Unix(ts, 0)).Abs() > 300*time.Second {
		r.t.Errorf("receiver: timestamp %q outside the window", tsText)
		http.Error(w, "stale", http.StatusUnauthorized)
		return
	}
	m := hmac.New(sha256.New, r.secret)
	fmt.Fprintf(m, "%s.", tsText)
	m.Write(body)
	want := "v1=" + hex.EncodeToString(m.Sum(nil))
	sig := req.Header.Get("X-Svc-Signature")
	if !hmac.Equal([]byte(want), []byte(sig)) {
		r.t.Errorf("receiver: bad signature %q", sig)
		http.Error(w, "signature", http.StatusUnauthorized)
		return
	}
	var env struct {
		SchemaVersion int    `json:"schemaVersion"`
		EventID       string `json:"eventId"`
		EventName     string `json:"eventName"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.SchemaVersion != 1 {
		r.t.Errorf("receiver: body %s", body)
		http.Error(w, "body", http.StatusBadRequest)
		return
	}
	if req.Header.Get("X-Svc-Event-Id") != env.EventID || req.Header.Get("X-Svc-Event") != env.EventName ||
		req.Header.Get("Idempotency-Key") != env.EventID || req.Header.Get("Content-Type") != "application/json; charset=utf-8" {
		r.t.Errorf("receiver: headers %v do not match body %s", req.Header, body)
		http.Error(w, "mismatch", http.StatusForbidden)
		return
	}
	r.mu.Lock()
	n := len(r.got)
	r.got = append(r.got, received{EventID: env.EventID, EventName: env.EventName, Subscription: req.Header.Get("X-Svc-Subscription-Id"),
		Signature: sig, Timestamp: ts, Body: body})
	r.mu.Unlock()
	status := http.StatusOK
	if r.answer != nil {
		status = r.answer(n)
	}
	w.WriteHeader(status)
	r.notify <- struct{}{}
}

func (r *receiver) received() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// waitCount blocks until the receiver has verified n requests.
func (r *receiver) waitCount(n int) []received {
	r.t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		if got := r.received(); len(got) >= n {
			return got
		}
		select {
		case <-r.notify:
		case <-deadline:
			r.t.Fatalf("receiver got %d requests, want %d", len(r.received()), n)
		}
	}
}

func storeTxn(ops ...store.Op) store.TxnRequest { return store.TxnRequest{Then: ops} }
