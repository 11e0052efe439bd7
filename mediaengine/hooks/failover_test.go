package hooks

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/svcplatform/svc/shared/engineapi"
)

// TestHooksFailOverToAnotherControlNode: the configured control node is
// down (its port refuses) and the first fallback cannot serve (503); the
// hook is answered by the third within the timeout, and later hooks go
// straight to it. When it fails in turn, the first one, back up, answers.
func TestHooksFailOverToAnotherControlNode(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	busy := &receiver{got: map[string][]map[string]any{}, answer: func(string, map[string]any) (int, any, time.Duration) {
		return http.StatusServiceUnavailable, map[string]any{"code": "unavailable"}, 0
	}}
	busySrv := httptest.NewServer(busy)
	defer busySrv.Close()
	good := &receiver{got: map[string][]map[string]any{}, answer: func(string, map[string]any) (int, any, time.Duration) {
		return 200, engineapi.HookAnswer{Allow: true}, 0
	}}
	goodSrv := httptest.NewServer(good)
	c := newClient(t, down, func(cfg *engineapi.Config) {
		cfg.Hooks.FallbackURLs = []string{busySrv.URL, goodSrv.URL}
		cfg.Hooks.AllowCacheTTL = 0
	})
	play := func(ticket string) (engineapi.HookAnswer, time.Duration, error) {
		start := time.Now()
		ans, err := c.AllowPlay(t.Context(), engineapi.PlayHook{StreamRef: engineapi.StreamRef{App: "live", Stream: "cam"}, Protocol: "http-flv",
			Params: map[string]string{"svc_ticket": ticket}})
		return ans, time.Since(start), err
	}
	ans, took, err := play("a")
	if err != nil || !ans.Allow {
		t.Fatalf("on_play with the first node down: %+v %v", ans, err)
	}
	if took > time.Second {
		t.Fatalf("failing over took %s", took)
	}
	if busy.count(engineapi.HookOnPlay) != 1 || good.count(engineapi.HookOnPlay) != 1 {
		t.Fatalf("busy got %d, good got %d", busy.count(engineapi.HookOnPlay), good.count(engineapi.HookOnPlay))
	}
	for i := 0; i < 5; i++ {
		if _, _, err := play("b"); err != nil {
			t.Fatal(err)
		}
	}
	if busy.count(engineapi.HookOnPlay) != 1 || good.count(engineapi.HookOnPlay) != 6 {
		t.Fatalf("later hooks did not go straight to the node that answered: busy %d, good %d", busy.count(engineapi.HookOnPlay), good.count(engineapi.HookOnPlay))
	}
	// The node that answered goes away; the first comes back.
	goodSrv.Close()
	back := &receiver{got: map[string][]map[string]any{}, answer: func(string, map[string]any) (int, any, time.Duration) {
		return 200, engineapi.HookAnswer{Allow: false, Reason: "expired"}, 0
	}}
	ln2, err := net.Listen("tcp", down[len("http://"):])
	if err != nil {
		t.Fatalf("listening again on %s: %v", down, err)
	}
	srv := &http.Server{Handler: back}
	go srv.Serve(ln2)
	defer srv.Close()
	ans, took, err = play("c")
	if err != nil || ans.Allow || ans.Reason != "expired" || back.count(engineapi.HookOnPlay) != 1 {
		t.Fatalf("after the answering node left: %+v %v (took %s)", ans, err, took)
	}
	// Every node down: a clear error within the timeout, no answer made up.
	srv.Close()
	busySrv.Close()
	if _, took, err = play("d"); err == nil || took > c.cfg.Timeout.D()+time.Second {
		t.Fatalf("with every node down: %v after %s", err, took)
	}
}
