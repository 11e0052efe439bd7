package supervisor

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
	"github.com/svcplatform/svc/test/svcbin"
)

// recorder collects transitions as the agent's reporter would.
type recorder struct {
	mu  sync.Mutex
	trs []agentapi.EngineTransition
}

func (r *recorder) report(tr agentapi.EngineTransition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.trs = append(r.trs, tr)
}

func (r *recorder) kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, t := range r.trs {
		out = append(out, t.Kind)
	}
	return out
}

func (r *recorder) wait(t *testing.T, n int, within time.Duration) []agentapi.EngineTransition {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		if len(r.trs) >= n {
			out := append([]agentapi.EngineTransition(nil), r.trs...)
			r.mu.Unlock()
			return out
		}
		r.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("wanted %d transitions within %s, got %v", n, within, r.kinds())
	return nil
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// engineConfig writes a real engine configuration on loopback ports.
func engineConfig(t *testing.T, controlAddr string) string {
	dir := t.TempDir()
	secret := filepath.Join(dir, "control.secret")
	os.WriteFile(secret, []byte("test-secret-0123456789\n"), 0o600)
	c := engineapi.Defaults()
	c.NodeID, c.ControlAddr, c.ControlSecretFile, c.DataDir = "media-1", controlAddr, secret, dir
	c.HTTPAddr, c.RTSPAddr = freeAddr(t), freeAddr(t)
	// The engine binds the first pair of its RTP range for RTSP over UDP;
	// a random range keeps parallel test engines apart.
	c.RTPPortMin = 20000 + 2*rand.IntN(3000)
	c.RTPPortMax = c.RTPPortMin + 99
	data, _ := c.Marshal()
	path := filepath.Join(dir, "engine.yaml")
	os.WriteFile(path, data, 0o600)
	return path
}

func run(t *testing.T, cfg Config) (*Supervisor, *recorder) {
	rec := &recorder{}
	cfg.Binary, cfg.Report, cfg.Log = svcbin.Build(t), rec.report, zaptest.NewLogger(t)
	s := New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return s, rec
}

// TestCrashIsRestartedWithinTwoSeconds: kill -9 the engine; crashed is
// reported with the old pid and the last action, and a new engine answers
// health within 2 s.
func TestCrashIsRestartedWithinTwoSeconds(t *testing.T) {
	s, rec := run(t, Config{ConfigPath: engineConfig(t, freeAddr(t)), HealthInterval: 200 * time.Millisecond, BackoffMin: 500 * time.Millisecond})
	trs := rec.wait(t, 1, 20*time.Second)
	if trs[0].Kind != agentapi.TransitionStarted || trs[0].PID == 0 || trs[0].LastAction != ActionAgentStart || trs[0].Seq != 1 {
		t.Fatalf("first transition %+v", trs[0])
	}
	old := trs[0].PID
	killedAt := time.Now()
	syscall.Kill(old, syscall.SIGKILL)
	trs = rec.wait(t, 3, 5*time.Second)
	if trs[1].Kind != agentapi.TransitionCrashed || trs[1].PreviousPID != old || trs[1].LastAction != ActionAgentStart {
		t.Fatalf("crash transition %+v", trs[1])
	}
	if trs[2].Kind != agentapi.TransitionStarted || trs[2].PID == old || trs[2].LastAction != ActionAutoRestart {
		t.Fatalf("restart transition %+v", trs[2])
	}
	if took := trs[2].At.Sub(killedAt); took > 2*time.Second {
		t.Fatalf("restart took %s", took)
	}
	if st := s.State(); st.Status != agentapi.EngineRunning || st.PID != trs[2].PID || st.Restarts != 1 {
		t.Fatalf("state %+v", st)
	}
	// Reload reaches the engine; stop is reported and sticks.
	if _, err := s.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Stop(t.Context()); err != nil || st.Status != agentapi.EngineStopped {
		t.Fatalf("stop %+v %v", st, err)
	}
	trs = rec.wait(t, 4, time.Second)
	if trs[3].Kind != agentapi.TransitionStopped || trs[3].LastAction != ActionStop {
		t.Fatalf("stop transition %+v", trs[3])
	}
	if _, err := s.Reload(t.Context()); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("reload when stopped: %v", err)
	}
}

// TestFailingStartBacksOff: an engine that cannot start (its control port
// is taken) reports start_failed once and is retried with growing delays,
// not in a storm; once the port is free it starts.
func TestFailingStartBacksOff(t *testing.T) {
	blocker, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, rec := run(t, Config{ConfigPath: engineConfig(t, blocker.Addr().String()), BackoffMin: 300 * time.Millisecond, BackoffMax: 5 * time.Second})
	trs := rec.wait(t, 1, 20*time.Second)
	// The reason is the engine's own error, not only its exit status.
	if trs[0].Kind != agentapi.TransitionStartFailed || !strings.Contains(trs[0].Reason, "address already in use") {
		t.Fatalf("first transition %+v", trs[0])
	}
	time.Sleep(3 * time.Second)
	// Attempts at about 0, 0.3, 0.9, 2.1, 4.5 s: a loaded machine may catch
	// one attempt in flight, so wait for it to settle between attempts.
	st := s.State()
	for deadline := time.Now().Add(3 * time.Second); st.Status != agentapi.EngineStartFailed && time.Now().Before(deadline); st = s.State() {
		time.Sleep(20 * time.Millisecond)
	}
	if st.Restarts > 5 || st.Restarts < 2 || st.Status != agentapi.EngineStartFailed || st.NextStartAt == nil {
		t.Fatalf("after 3 s of failing: %+v", st)
	}
	if k := rec.kinds(); len(k) != 1 {
		t.Fatalf("start_failed reported per attempt: %v", k)
	}
	blocker.Close()
	if st, err := s.Start(t.Context()); err != nil || st.Status != agentapi.EngineRunning {
		t.Fatalf("start once the port is free: %+v %v", st, err)
	}
	// The start is the caller's, or the backoff's own attempt when that
	// came first on a loaded machine.
	trs = rec.wait(t, 2, time.Second)
	if trs[1].Kind != agentapi.TransitionStarted || (trs[1].LastAction != ActionStart && trs[1].LastAction != ActionAutoRestart) {
		t.Fatalf("%+v", trs[1])
	}
}
