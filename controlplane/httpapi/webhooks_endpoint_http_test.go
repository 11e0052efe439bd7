package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/webhooks"
	"github.com/svcplatform/svc/test/testkit"
	"github.com/svcplatform/svc/test/testkit/controlnode"
)

// verifyingReceiver is a webhook receiver that checks each delivery as
// contract A's receiver duties say before acknowledging it.
type verifyingReceiver struct {
	t      *testing.T
	secret []byte
	URL    string
	delay  time.Duration
	mu     sync.Mutex
	events map[string]int // eventId -> verified deliveries
	names  []string
}

func newVerifyingReceiver(t *testing.T, secret string, delay time.Duration) *verifyingReceiver {
	r := &verifyingReceiver{t: t, secret: []byte(secret), delay: delay, events: map[string]int{}}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	r.URL = srv.URL + "/svc-events"
	return r
}

func (r *verifyingReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	if err := webhooks.Verify(r.secret, req.Header.Get("X-Svc-Timestamp"), req.Header.Get("X-Svc-Signature"), body, time.Now(), 300*time.Second); err != nil {
		r.t.Errorf("receiver: %v", err)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var env events.Envelope
	if err := json.Unmarshal(body, &env); err != nil || env.SchemaVersion != 1 || env.EventID != req.Header.Get("X-Svc-Event-Id") ||
		env.EventName != req.Header.Get("X-Svc-Event") || req.Header.Get("Idempotency-Key") != env.EventID {
		r.t.Errorf("receiver: headers %v vs body %s", req.Header, body)
		w.WriteHeader(http.StatusForbidden)
		return
	}
	time.Sleep(r.delay) // a slow receiver keeps deliveries in flight
	r.mu.Lock()
	r.events[env.EventID]++
	r.names = append(r.names, env.EventName)
	r.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

func (r *verifyingReceiver) count(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[id]
}

func (r *verifyingReceiver) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.events {
		n += c
	}
	return n
}

func allowPrivate(c *config.Config) { c.WebhookAllowPrivateTargets = true }

func planBody(name, endpoint, secret string, extra string) string {
	return fmt.Sprintf(`{"name":%q,"endpoint":%q,"secret":%q,"enabled":true,"events":["media.*","engine.webhook.on_play"],"allowHttp":true,"timeoutSeconds":5,"maxAttempts":3%s}`,
		name, endpoint, secret, extra)
}

// TestWebhookPlansOverHTTP walks the plan operations end to end and checks
// that the secret never appears in any answer or log line.
func TestWebhookPlansOverHTTP(t *testing.T) {
	logs := &testkit.Output{}
	ts := controlnode.StartNodeWith(t, "wh", "", "", allowPrivate, logs)
	admin, viewer := ts.Token("*"), ts.Token("system.view")
	const secret = "plan-secret-that-must-never-leak-42"
	const rotated = "rotated-secret-that-must-never-leak"
	rcv := newVerifyingReceiver(t, secret, 0)
	var bodies []string
	post := func(path, tok, body string) controlnode.Response {
		r := ts.Do("POST", path, tok, "application/json", []byte(body))
		bodies = append(bodies, string(r.Body))
		return r
	}
	r := post("/api/v2/system/webhooks/subscriptions", admin, planBody("CRM", rcv.URL, secret, ""))
	if r.Status != 200 {
		t.Fatalf("create = %d %s", r.Status, r.Body)
	}
	var plan struct {
		ID, State string
		HasSecret bool
		Events    []string
	}
	r.JSON(t, &plan)
	if plan.ID == "" || !plan.HasSecret || plan.State != "active" || strings.Join(plan.Events, ",") != "media.*,engine.webhook.OnPlay" {
		t.Fatalf("created plan = %s", r.Body)
	}
	// Rule violations answer with the contract's codes.
	for _, c := range []struct {
		Body, code string
		Status     int
	}{
		{planBody("CRM", rcv.URL, secret, ""), "webhook_name_conflict", 409},
		{planBody("x", rcv.URL, "short", ""), "invalid_body", 400},
		{planBody("x", "ftp://h/", secret, ""), "invalid_body", 400},
		{planBody("x", rcv.URL+"?a=1", secret, ""), "invalid_body", 400},
		{planBody("x", rcv.URL, secret, `,"description":"`+strings.Repeat("d", 513)+`"`), "invalid_body", 400},
		{strings.Replace(planBody("x", rcv.URL, secret, ""), `"maxAttempts":3`, `"maxAttempts":11`, 1), "invalid_body", 400},
		{strings.Replace(planBody("x", rcv.URL, secret, ""), `"timeoutSeconds":5`, `"timeoutSeconds":1`, 1), "invalid_body", 400},
		{strings.Replace(planBody("x", rcv.URL, secret, ""), `"media.*",`, `"no.such.event",`, 1), "invalid_body", 400},
		{strings.Replace(planBody("x", rcv.URL, secret, ""), `"allowHttp":true`, `"allowHttp":false`, 1), "invalid_body", 400},
	} {
		checkErrorBody(t, post("/api/v2/system/webhooks/subscriptions", admin, c.Body), c.Status, c.code)
	}
	checkErrorBody(t, post("/api/v2/system/webhooks/subscriptions", viewer, planBody("v", rcv.URL, secret, "")), 403, "permission_denied")
	// An oversized secret is refused without being echoed.
	checkErrorBody(t, post("/api/v2/system/webhooks/subscriptions", admin, planBody("big", rcv.URL, secret+strings.Repeat("x", 250), "")), 400, "invalid_body")

	// Update without a secret keeps it; with one rotates it.
	put := func(body string) controlnode.Response {
		r := ts.Do("PUT", "/api/v2/system/webhooks/subscriptions/"+plan.ID, admin, "application/json", []byte(body))
		bodies = append(bodies, string(r.Body))
		return r
	}
	if r := put(strings.Replace(planBody("CRM", rcv.URL, "", ""), `"secret":"",`, ``, 1)); r.Status != 200 {
		t.Fatalf("update = %d %s", r.Status, r.Body)
	}
	// An empty secret keeps it too (contract A); a short one is refused by
	// the schema's 16-character minimum.
	if r := put(planBody("CRM", rcv.URL, "", "")); r.Status != 200 {
		t.Fatalf("update with an empty secret = %d %s", r.Status, r.Body)
	}
	checkErrorBody(t, put(planBody("CRM", rcv.URL, "fifteen-chars!!", "")), 400, "invalid_body")
	// A real test event through the real path, signed with the kept secret.
	r = post("/api/v2/system/webhooks/subscriptions/"+plan.ID+"/test", admin, `{"message":"ping"}`)
	var tr struct{ EventId, DeliveryId, EventName string }
	r.JSON(t, &tr)
	if r.Status != 200 || tr.EventName != "system.webhook.test" {
		t.Fatalf("test = %d %s", r.Status, r.Body)
	}
	testkit.Eventually(t, 60*time.Second, "the test event to arrive", func() bool { return rcv.count(tr.EventId) == 1 })
	rcv.secret = []byte(rotated)
	if r := put(planBody("CRM", rcv.URL, rotated, "")); r.Status != 200 {
		t.Fatalf("rotate = %d %s", r.Status, r.Body)
	}
	// A standard event after the rotation is signed with the new secret.
	ev, _ := events.New(events.MediaStreamOnline, events.SourceMedia, "wh", map[string]any{"App": "live", "streamId": "cam", "online": true})
	op, _ := events.Op(ev)
	if _, err := ts.S.Node.Txn(t.Context(), store.TxnRequest{Then: []store.Op{op}}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 60*time.Second, "the event to arrive", func() bool { return rcv.count(ev.EventID) == 1 })

	var deliveries struct {
		Total int
		Rows  []struct{ Id, EventName, State string }
	}
	testkit.Eventually(t, 60*time.Second, "both deliveries to be Completed", func() bool {
		r := ts.Get("/api/v2/system/webhooks/subscriptions/"+plan.ID+"/deliveries?state=Completed", viewer)
		bodies = append(bodies, string(r.Body))
		r.JSON(t, &deliveries)
		return deliveries.Total == 2
	})
	checkErrorBody(t, post("/api/v2/system/webhooks/deliveries/"+deliveries.Rows[0].Id+"/retry", admin, ""), 409, "delivery_not_retryable")
	checkErrorBody(t, post("/api/v2/system/webhooks/outbox/"+ev.EventID+"/retry", admin, ""), 409, "delivery_not_retryable")
	checkErrorBody(t, post("/api/v2/system/webhooks/outbox/no-such-event/retry", admin, ""), 404, "not_found")
	checkErrorBody(t, post("/api/v2/system/webhooks/test", admin, `{}`), 400, "invalid_body")
	checkErrorBody(t, post("/api/v2/system/webhooks/test", admin, `{"subscriptionId":"nope"}`), 404, "not_found")

	for _, path := range []string{"/api/v2/system/webhooks/subscriptions?includeArchived=true", "/api/v2/system/webhooks/status",
		"/api/v2/system/webhooks/catalog", "/api/v2/events/outbox?pageSize=5"} {
		r := ts.Get(path, admin)
		if r.Status != 200 {
			t.Fatalf("%s = %d %s", path, r.Status, r.Body)
		}
		bodies = append(bodies, string(r.Body))
	}
	var st struct {
		ActivePlans          int
		DispatcherOnThisNode bool
		Deliveries           map[string]int
	}
	ts.Get("/api/v2/system/webhooks/status", viewer).JSON(t, &st)
	if st.ActivePlans != 1 || !st.DispatcherOnThisNode || st.Deliveries["Completed"] != 2 {
		t.Fatalf("status = %+v", st)
	}
	if r := post("/api/v2/system/webhooks/subscriptions/"+plan.ID+"/archive", admin, ""); r.Status != 200 || !strings.Contains(string(r.Body), `"state":"archived"`) {
		t.Fatalf("archive = %d %s", r.Status, r.Body)
	}
	checkErrorBody(t, post("/api/v2/system/webhooks/subscriptions/"+plan.ID+"/archive", admin, ""), 409, "subscription_archived")
	r = ts.Get("/api/v2/system/webhooks/subscriptions", viewer)
	if !strings.Contains(string(r.Body), `"rows":[]`) {
		t.Fatalf("archived plan listed by default: %s", r.Body)
	}
	for _, b := range bodies {
		if strings.Contains(b, secret) || strings.Contains(b, rotated) || strings.Contains(b, "sealed") {
			t.Fatalf("a controlnode.Response holds the secret: %s", b)
		}
	}
	if l := logs.String(); strings.Contains(l, secret) || strings.Contains(l, rotated) {
		t.Fatal("the secret appears in the logs")
	}
}

// TestLegacyWebhookMigratesAtStart: the legacy endpoint setting becomes
// "Default delivery plan" on the first leader, with its secret sealed.
func TestLegacyWebhookMigratesAtStart(t *testing.T) {
	const legacySecret = "legacy-secret-from-the-old-version"
	file := filepath.Join(t.TempDir(), "legacy-secret")
	if err := os.WriteFile(file, []byte(legacySecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &testkit.Output{}
	ts := controlnode.StartNodeWith(t, "legacy", "", "", func(c *config.Config) {
		c.WebhookAllowPrivateTargets = true
		c.WebhookLegacyEndpoint, c.WebhookLegacySecretFile = "http://127.0.0.1:9/legacy-hook", file
	}, logs)
	viewer := ts.Token("system.view")
	var list struct {
		Rows []struct {
			Name, Endpoint string
			AllowHttp      bool
			Events         []string
		}
	}
	testkit.Eventually(t, 60*time.Second, "the migrated plan", func() bool {
		r := ts.Get("/api/v2/system/webhooks/subscriptions", viewer)
		if strings.Contains(string(r.Body), legacySecret) {
			t.Fatalf("the legacy secret is in an answer: %s", r.Body)
		}
		r.JSON(t, &list)
		return len(list.Rows) == 1
	})
	if p := list.Rows[0]; p.Name != "Default delivery plan" || p.Endpoint != "http://127.0.0.1:9/legacy-hook" || !p.AllowHttp || len(p.Events) == 0 {
		t.Fatalf("migrated plan = %+v", p)
	}
	if strings.Contains(logs.String(), legacySecret) {
		t.Fatal("the legacy secret is in the logs")
	}
}

// TestPrivateTargetsRefusedByDefault: without the administrator's switch,
// a plan cannot point at loopback or cloud metadata.
func TestPrivateTargetsRefusedByDefault(t *testing.T) {
	ts := controlnode.StartNode(t, "ssrf", "", "")
	admin := ts.Token("*")
	for _, ep := range []string{"http://127.0.0.1:8080/", "http://localhost/", "http://169.254.169.254/latest/meta-data", "http://[::1]/"} {
		r := ts.Do("POST", "/api/v2/system/webhooks/subscriptions", admin, "application/json", []byte(planBody("p", ep, "0123456789abcdef", "")))
		checkErrorBody(t, r, 400, "webhook_target_not_allowed")
	}
}

// TestEngineHooksBecomeEvents: a hook stored through the domain side the
// agent's receiver calls shows in the inbox and as an engine.webhook event.
func TestEngineHooksBecomeEvents(t *testing.T) {
	ts := controlnode.StartNode(t, "hooks", "", "")
	logsViewer := ts.Token("system.logs.view")
	raw := `{"app":"live","stream":"cam9","ip":"10.1.1.1","params":"svc_ticket=abc"}`
	in, err := ts.S.Events.ReceiveEngineHook(t.Context(), "on_play", "ms-7", []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	var inbox struct {
		Total int
		Rows  []struct{ Id, HookName, RawJson, MediaServerId string }
	}
	ts.Get("/api/v2/engine/webhook-inbox?hookName=on_play&mediaServerId=ms-7", logsViewer).JSON(t, &inbox)
	if inbox.Total != 1 || inbox.Rows[0].Id != in.ID || inbox.Rows[0].HookName != "OnPlay" || inbox.Rows[0].RawJson != raw {
		t.Fatalf("inbox = %+v", inbox)
	}
	var outbox struct {
		Rows []struct {
			EventId, EventName, Source string
			Data                       map[string]any
		}
	}
	ts.Get("/api/v2/events/outbox", logsViewer).JSON(t, &outbox)
	if len(outbox.Rows) != 1 || outbox.Rows[0].EventId != in.ID || outbox.Rows[0].EventName != "engine.webhook.OnPlay" ||
		outbox.Rows[0].Source != "engine" || outbox.Rows[0].Data["RawJson"] != raw {
		t.Fatalf("outbox = %+v", outbox)
	}
	checkErrorBody(t, ts.Get("/api/v2/engine/webhook-inbox?hookName=bad-name", logsViewer), 400, "invalid_query")
}

// TestDeliveryAcrossLeaderFailover kills the leader of a 3-node cluster
// while deliveries are in flight: every event still reaches the receiver.
func TestDeliveryAcrossLeaderFailover(t *testing.T) {
	first := controlnode.StartNodeWith(t, "f1", "", "", allowPrivate, nil)
	second := controlnode.StartNodeWith(t, "f2", first.URL, first.KeyFile(), allowPrivate, nil)
	third := controlnode.StartNodeWith(t, "f3", second.URL, first.KeyFile(), allowPrivate, nil)
	nodes := []*controlnode.Node{first, second, third}
	const secret = "failover-secret-0123456789"
	rcv := newVerifyingReceiver(t, secret, 300*time.Millisecond)
	admin := first.Token("*")
	if r := first.Do("POST", "/api/v2/system/webhooks/subscriptions", admin, "application/json", []byte(planBody("fo", rcv.URL, secret, ""))); r.Status != 200 {
		t.Fatalf("create = %d %s", r.Status, r.Body)
	}
	leader := func() *controlnode.Node {
		for _, n := range nodes {
			if n.S.Node.Leadership().IsLeader() {
				return n
			}
		}
		return nil
	}
	old := leader()
	var ids []string
	emit := func(via *controlnode.Node, n int) {
		for i := 0; i < n; i++ {
			ev, _ := events.New(events.MediaServerStarted, events.SourceMedia, via.S.Config.NodeID, map[string]any{"NodeId": via.S.Config.NodeID, "i": i})
			op, _ := events.Op(ev)
			// A loaded machine may see a leader change mid-write: an
			// unknown outcome is settled by reading the event back before
			// writing it again, as any careful client would.
			for attempt := 0; ; attempt++ {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				_, err := via.S.Node.Txn(ctx, store.TxnRequest{Then: []store.Op{op}})
				if err != nil && attempt < 5 && (errors.Is(err, store.ErrUnknownOutcome) || errors.Is(err, store.ErrNoLeader)) {
					time.Sleep(time.Second)
					r, rerr := via.S.Node.Range(ctx, op.Key, store.RangeOptions{Consistency: store.Linearizable})
					cancel()
					if rerr == nil && len(r.KVs) == 1 {
						break
					}
					continue
				}
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				break
			}
			ids = append(ids, ev.EventID)
		}
	}
	emit(old, 30)
	testkit.Eventually(t, 60*time.Second, "deliveries to be in flight", func() bool { return old.S.Dispatcher.Sent() >= 5 })
	old.S.Kill()
	var survivor *controlnode.Node
	for _, n := range nodes {
		if n != old {
			survivor = n
		}
	}
	testkit.Eventually(t, 60*time.Second, "a new leader", func() bool { l := leader(); return l != nil && l != old })
	emit(survivor, 10)
	testkit.Eventually(t, 60*time.Second, "every event to reach the receiver", func() bool {
		for _, id := range ids {
			if rcv.count(id) == 0 {
				return false
			}
		}
		return true
	})
	t.Logf("%d events, %d verified deliveries (duplicates come from attempts whose answer was lost with the leader)", len(ids), rcv.total())
}
