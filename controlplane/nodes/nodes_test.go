package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/storetest"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/pki"
)

func newService(t *testing.T) *Service {
	t.Helper()
	n := storetest.SingleNode(t)
	return &Service{Store: n, LocalNodeID: "cp1"}
}

var admin = audit.Actor{Type: "api-token", ID: "t1"}

func csr(t *testing.T) string {
	k, _ := pki.NewKey()
	c, _ := pki.NewCSR(k, "x")
	return string(c)
}

func enrolled(t *testing.T, s *Service, ca *pki.CA, id string) *Record {
	t.Helper()
	en, err := s.CreateEnrollment(t.Context(), admin, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := s.Enroll(t.Context(), ca, EnrollRequest{Code: en.Code, CSR: csr(t), Hostname: "h1", AgentVersion: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// eventsNamed reads the outbox.
func eventsNamed(t *testing.T, s *Service) map[string][]map[string]any {
	resp, _ := s.Store.Range(t.Context(), events.OutboxPrefix, store.RangeOptions{End: store.PrefixEnd(events.OutboxPrefix)})
	out := map[string][]map[string]any{}
	for _, kv := range resp.KVs {
		var ev events.Envelope
		json.Unmarshal(kv.Value, &ev)
		var d map[string]any
		json.Unmarshal(ev.Data, &d)
		out[ev.EventName] = append(out[ev.EventName], d)
	}
	return out
}

func TestCodeIsConsumedExactlyOnce(t *testing.T) {
	s := newService(t)
	ca, _, _ := pki.NewCA("c", time.Now())
	en, err := s.CreateEnrollment(t.Context(), admin, "media-1", 0)
	if err != nil || len(en.Code) != 35 || time.Until(en.ExpiresAt) < 14*time.Minute {
		t.Fatalf("code %+v %v", en, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, refused := 0, 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := s.Enroll(context.Background(), ca, EnrollRequest{Code: en.Code, CSR: csr(t)})
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				ok++
			} else if errors.Is(err, ErrCodeRefused) {
				refused++
			}
		}()
	}
	wg.Wait()
	if ok != 1 || refused != 7 {
		t.Fatalf("%d enrollments succeeded, %d refused", ok, refused)
	}
	for _, c := range []struct {
		id  string
		ttl time.Duration
	}{{"bad id!", 0}, {"media-2", time.Second}, {"media-2", 48 * time.Hour}} {
		if _, err := s.CreateEnrollment(t.Context(), admin, c.id, c.ttl); !errors.Is(err, ErrInvalid) {
			t.Fatalf("%+v: %v", c, err)
		}
	}
}

func TestAuthorizeRefusesRetiredAndSupersededCertificates(t *testing.T) {
	s := newService(t)
	ca, _, _ := pki.NewCA("c", time.Now())
	rec := enrolled(t, s, ca, "media-1")
	if _, err := s.Authorize(t.Context(), "media-1", rec.CertsValidFrom); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authorize(t.Context(), "media-1", rec.CertsValidFrom.Add(-time.Hour)); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("older certificate: %v", err)
	}
	if _, err := s.Authorize(t.Context(), "ghost", time.Now()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown node: %v", err)
	}
	if _, err := s.Retire(t.Context(), admin, "media-1", "decommissioned"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authorize(t.Context(), "media-1", rec.CertsValidFrom); !errors.Is(err, ErrRetired) {
		t.Fatalf("retired node: %v", err)
	}
	if _, err := s.CreateEnrollment(t.Context(), admin, "media-1", 0); !errors.Is(err, ErrRetired) {
		t.Fatalf("a retired id enrolled again: %v", err)
	}
}

// TestMediaServerEvents walks the engine lifecycle and checks each event's
// data fields with the contract's capitalisation.
func TestMediaServerEvents(t *testing.T) {
	s := newService(t)
	ca, _, _ := pki.NewCA("c", time.Now())
	enrolled(t, s, ca, "media-1")
	ctx := t.Context()
	seq := int64(0)
	tr := func(kind string, pid, prev int, action string) {
		t.Helper()
		seq++
		tr := agentapi.EngineTransition{BootID: "b1", Seq: seq, Kind: kind, PID: pid, PreviousPID: prev, LastAction: action, At: time.Now()}
		if _, err := s.ApplyTransition(ctx, "media-1", tr); err != nil {
			t.Fatal(err)
		}
	}
	tr(agentapi.TransitionStartFailed, 0, 0, "agent-start")
	tr(agentapi.TransitionStarted, 101, 0, "auto-restart")
	tr(agentapi.TransitionCrashed, 0, 101, "auto-restart")
	tr(agentapi.TransitionStarted, 102, 0, "auto-restart")
	// A retried report is applied once.
	if _, err := s.ApplyTransition(ctx, "media-1", agentapi.EngineTransition{BootID: "b1", Seq: seq, Kind: agentapi.TransitionStarted, PID: 102}); err != nil {
		t.Fatal(err)
	}
	tr(agentapi.TransitionStopped, 0, 102, "stop")
	ev := eventsNamed(t, s)
	if len(ev[events.MediaServerStartFailed]) != 1 || len(ev[events.MediaServerStarted]) != 1 || len(ev[events.MediaServerCrashed]) != 1 ||
		len(ev[events.MediaServerRecovered]) != 1 || len(ev[events.MediaServerStopped]) != 1 {
		t.Fatalf("events %v", ev)
	}
	sf := ev[events.MediaServerStartFailed][0]
	if sf["NodeId"] != "media-1" || sf["engineNodeId"] != "media-1" || sf["LastAction"] != "agent-start" || sf["reason"] != ReasonStartFailed || sf["occurredAtUtc"] == nil {
		t.Fatalf("start_failed %v", sf)
	}
	cr := ev[events.MediaServerCrashed][0]
	if cr["previousPid"] != float64(101) || cr["LastAction"] != "auto-restart" || cr["reason"] != ReasonCrashed {
		t.Fatalf("crashed %v", cr)
	}
	// The first start after the failed start is a start; the return after
	// the crash is a recovery.
	rc := ev[events.MediaServerRecovered][0]
	if rc["previousStatus"] != MediaOffline || rc["status"] != MediaOnline || rc["mediaServerId"] != "media-1" || rc["EngineNodeId"] != "media-1" ||
		rc["hookName"] != CauseManagedProcess {
		t.Fatalf("recovered %v", rc)
	}
	st := ev[events.MediaServerStopped][0]
	if st["previousStatus"] != MediaOnline || st["status"] != MediaOffline {
		t.Fatalf("stopped %v", st)
	}
	for _, bad := range []agentapi.EngineTransition{{BootID: "b1", Seq: 99, Kind: "exploded"}, {Seq: 1, Kind: agentapi.TransitionStarted}} {
		if _, err := s.ApplyTransition(ctx, "media-1", bad); !errors.Is(err, ErrInvalid) {
			t.Fatalf("%+v: %v", bad, err)
		}
	}
}

// TestHeartbeatTTL: a silent node goes offline by the leader's TTL (its
// media server with media.server.stopped), and its next heartbeat brings
// it back with media.server.recovered. Steady heartbeats write nothing.
func TestHeartbeatTTL(t *testing.T) {
	s := newService(t)
	ca, _, _ := pki.NewCA("c", time.Now())
	enrolled(t, s, ca, "media-1")
	ctx := t.Context()
	s.ApplyTransition(ctx, "media-1", agentapi.EngineTransition{BootID: "b", Seq: 1, Kind: agentapi.TransitionStarted, PID: 7})
	p := NewPresence(time.Hour)
	hb := agentapi.Heartbeat{AgentVersion: "v1", Hostname: "h1", Engine: agentapi.EngineState{Status: agentapi.EngineRunning, PID: 7}}
	rec, _ := s.Get(ctx, "media-1")
	if err := s.ObserveHeartbeat(ctx, rec, hb); err != nil {
		t.Fatal(err)
	}
	rev := s.Store.Revision()
	rec, _ = s.Get(ctx, "media-1")
	for i := 0; i < 5; i++ {
		p.Record("media-1", hb, time.Now())
		s.ObserveHeartbeat(ctx, rec, hb)
	}
	if s.Store.Revision() != rev {
		t.Fatal("steady heartbeats wrote to the store")
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); s.WatchTTL(wctx, p, 300*time.Millisecond, zapNop()) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if r, _ := s.Get(ctx, "media-1"); r.Status == StatusOffline {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a silent node stayed online")
		}
	}
	rec, _ = s.Get(ctx, "media-1")
	p.Record("media-1", hb, time.Now())
	if err := s.ObserveHeartbeat(ctx, rec, hb); err != nil {
		t.Fatal(err)
	}
	ev := eventsNamed(t, s)
	if len(ev[events.MediaServerStopped]) != 1 || ev[events.MediaServerStopped][0]["hookName"] != CauseHeartbeatTimeout ||
		len(ev[events.MediaServerRecovered]) != 1 || ev[events.MediaServerRecovered][0]["hookName"] != CauseHeartbeat {
		t.Fatalf("events %v", ev)
	}
	if r, _ := s.Get(ctx, "media-1"); r.Status != StatusOnline || r.Engine.Media != MediaOnline {
		t.Fatalf("after the heartbeat: %+v", r)
	}
}

func TestPresenceHistoryBuckets(t *testing.T) {
	p := NewPresence(time.Hour)
	base := time.Now().Add(-10 * time.Minute).Truncate(time.Minute)
	for i := 0; i < 60; i++ {
		p.Record("n", agentapi.Heartbeat{Host: agentapi.HostMetrics{CPUPercent: float64(i % 2 * 100)}}, base.Add(time.Duration(i)*5*time.Second))
	}
	b := p.History("n", base, base.Add(5*time.Minute), time.Minute)
	if len(b) != 5 || b[0].Samples != 12 || b[0].Sample.CPUPercent != 50 {
		t.Fatalf("buckets %+v", b)
	}
	p.Retention = time.Minute
	p.Record("n", agentapi.Heartbeat{}, time.Now())
	if got := p.History("n", base, time.Now().Add(time.Second), time.Hour); len(got) != 1 || got[0].Samples != 1 {
		t.Fatalf("retention kept %+v", got)
	}
}

func zapNop() *zap.Logger { return zap.NewNop() }

// TestPresenceHistoryIsBounded: however often a node reports, its history
// keeps at most historyPoints samples, each merging the heartbeats of its
// step.
func TestPresenceHistoryIsBounded(t *testing.T) {
	p := NewPresence(time.Hour)
	base := time.Now().Add(-2 * time.Hour)
	for i := 0; i < 7200; i++ {
		p.Record("n", agentapi.Heartbeat{Host: agentapi.HostMetrics{CPUPercent: 10}}, base.Add(time.Duration(i)*time.Second))
	}
	p.mu.RLock()
	n := len(p.nodes["n"].samples)
	p.mu.RUnlock()
	if n > historyPoints+1 {
		t.Fatalf("%d samples kept", n)
	}
	b := p.History("n", base.Add(time.Hour), base.Add(2*time.Hour), 10*time.Minute)
	total := 0
	for _, x := range b {
		total += x.Samples
		if x.Sample.CPUPercent != 10 {
			t.Fatalf("bucket mean %v", x.Sample.CPUPercent)
		}
	}
	if len(b) != 6 || total < 3590 {
		t.Fatalf("%d buckets with %d heartbeats", len(b), total)
	}
}
