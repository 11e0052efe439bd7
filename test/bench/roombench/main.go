// Command roombench measures two things of meeting rooms (issue 19): how
// long a new participant takes from its access ticket to the first frame
// of a publication it plays over WHEP, and what continuous recording of
// six publishing participants costs the engine.
//
// A control node runs in this process; an enrolled `svc agent run` runs
// `svc engine` as its child, both real processes as in production. The
// business backend (this program with an API token) creates a room and
// access tickets; participants are pion peers in this process that
// publish a clip made by ffmpeg (H.264 and Opus) over the room's WHIP
// path and play over its WHEP path, with their participant tokens, through
// the control plane, which relays the SDP to the engine. It writes its
// section of docs/benchmarks.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/apitoken"
	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/server"
	"github.com/svcplatform/svc/test/bench/benchdoc"
	"github.com/svcplatform/svc/test/testkit"
)

// pinnedEnv marks the process re-run under taskset on the client core.
const pinnedEnv = "ROOMBENCH_PINNED"

func main() {
	out := flag.String("out", "docs/benchmarks.md", "markdown file to write the section to")
	joins := flag.Int("joins", 100, "participants timed from their ticket to the first frame, one after another")
	window := flag.Duration("window", 20*time.Second, "engine CPU window of each recording round, with and without recording")
	rounds := flag.Int("rounds", 3, "rounds of recording on, then off")
	quick := flag.Bool("quick", false, "a small run: 20 joins, 2 rounds of 5 s windows")
	pin := flag.Bool("pin", runtime.NumCPU() >= 2, "run the agent and engine on CPU 0 and this process (control node, pion peers) on CPU 1 (taskset)")
	flag.Parse()
	cpus := runtime.NumCPU()
	if n, err := strconv.Atoi(os.Getenv(pinnedEnv)); err == nil {
		// Re-run pinned: the machine's CPUs are the parent's count.
		*pin, cpus = true, n
	}
	if *quick {
		*joins, *window, *rounds = 20, 5*time.Second, 2
	}
	cmd := fmt.Sprintf("go run ./test/bench/roombench -joins %d -window %s -rounds %d", *joins, *window, *rounds)
	if *quick {
		cmd = "go run ./test/bench/roombench -quick"
	}
	if *pin && os.Getenv(pinnedEnv) == "" {
		// Re-run on CPU 1 (the Go runtime sizes itself from the
		// affinity at start); exec keeps the pid `go run` waits for.
		taskset, err := exec.LookPath("taskset")
		if err == nil {
			self, _ := os.Executable()
			os.Setenv(pinnedEnv, strconv.Itoa(cpus))
			err = syscall.Exec(taskset, append([]string{"taskset", "-c", "1", self}, os.Args[1:]...), os.Environ())
		}
		fmt.Fprintln(os.Stderr, "roombench: pinning:", err)
		os.Exit(1)
	}
	b := &bench{pin: *pin, cpus: cpus}
	err := b.run(*out, cmd, *joins, *window, *rounds)
	if err != nil && b.dir != "" {
		fmt.Fprintf(os.Stderr, "roombench: the agent's and engine's log ends:\n%s\n", b.agentOutput())
	}
	b.stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "roombench:", err)
		os.Exit(1)
	}
}

// bench is the running platform.
type bench struct {
	pin        bool
	cpus       int // the machine's
	dir        string
	api, token string
	agent      *exec.Cmd
	agentLog   *os.File
	node       *server.Server
	enginePid  int
	stops      []func()
}

func (b *bench) run(outPath, cmd string, joins int, window time.Duration, rounds int) error {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		return fmt.Errorf("ffmpeg is required (Debian package ffmpeg; make bench installs it): %w", err)
	}
	dir, err := os.MkdirTemp("", "roombench-")
	if err != nil {
		return err
	}
	b.dir = dir
	svc := filepath.Join(dir, "svc")
	if out, err := exec.Command("go", "build", "-o", svc, "./cmd/svc").CombinedOutput(); err != nil {
		return fmt.Errorf("building svc (run from the repository root): %w\n%s", err, out)
	}
	c, err := makeClip(dir)
	if err != nil {
		return err
	}
	if err := b.start(svc); err != nil {
		return err
	}
	r, err := b.newRoom()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "== %d joins to the first frame\n", joins)
	js, err := r.measureJoins(c, joins)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "== recording six publishers: %d rounds of %s\n", rounds, window)
	rec, err := r.measureRecording(c, window, rounds)
	if err != nil {
		return err
	}
	return benchdoc.WriteSection(outPath, "roombench", report(cmd, b.machine(), b.pin, js, rec))
}

// start runs the control node in this process and the media host (agent
// and engine) as processes, and waits until the engine runs.
func (b *bench) start(svc string) error {
	ctx := context.Background()
	cfg := config.Defaults()
	cfg.NodeID, cfg.DataDir, cfg.LogLevel = "cp1", filepath.Join(b.dir, "cp1"), "error"
	cfg.HTTPAddr, cfg.RaftAddr, cfg.AgentAddr = benchdoc.FreeAddr(), benchdoc.FreeAddr(), benchdoc.FreeAddr()
	cfg.NodeHeartbeatTTL = 5 * time.Second
	// The load comes from one address but stands for many participants.
	cfg.MaxConnectionsPerClient = 1_000_000
	if err := cfg.Validate(); err != nil {
		return err
	}
	s, err := server.Start(ctx, cfg, zap.NewNop())
	if err != nil {
		return err
	}
	b.node = s
	for !s.Node.Leadership().IsLeader() {
		time.Sleep(20 * time.Millisecond)
	}
	b.api = "http://" + cfg.HTTPAddr
	if b.token, err = benchdoc.WriteToken(ctx, s.Node, apitoken.Record{TokenID: "roombench", Name: "business backend", OwnerUserID: "roombench",
		Permissions: []string{"*"}}); err != nil {
		return err
	}

	var en struct{ Code, CaHash, AgentServerUrl string }
	if !testkit.Within(30*time.Second, func() bool {
		st, _, _ := b.call("POST", "/api/v2/system/lifecycle/agents/media-1/enrollment", map[string]any{}, &en)
		return st == 200
	}) {
		return errors.New("no enrollment code within 30 s")
	}
	agentDir := filepath.Join(b.dir, "agent")
	if out, err := exec.Command(svc, "agent", "enroll", "--server", en.AgentServerUrl, "--code", en.Code, "--ca-hash", en.CaHash,
		"--data-dir", agentDir).CombinedOutput(); err != nil {
		return fmt.Errorf("enroll: %w: %s", err, out)
	}
	args := []string{svc, "agent", "run", "--data-dir", agentDir, "--log-level", "warn", "--engine-control-addr", benchdoc.FreeAddr(),
		"--engine-http-addr", benchdoc.FreeAddr(), "--engine-rtsp-addr", benchdoc.FreeAddr(), "--engine-webrtc-addr", freeUDP(),
		"--rtp-port-min", "31000", "--rtp-port-max", "31099", "--sysctl-dir", filepath.Join(agentDir, "sysctl.d"), "--heartbeat-interval", "1s"}
	if b.pin {
		// The engine, the agent's child, keeps the agent's CPU.
		args = append([]string{"taskset", "-c", "0"}, args...)
	}
	if b.agentLog, err = os.Create(filepath.Join(b.dir, "agent.log")); err != nil {
		return err
	}
	b.agent = exec.Command(args[0], args[1:]...)
	b.agent.Stdout, b.agent.Stderr = b.agentLog, b.agentLog
	b.agent.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := b.agent.Start(); err != nil {
		return err
	}
	if !testkit.Within(120*time.Second, func() bool {
		var list struct {
			Rows []struct{ AgentStatus, EngineStatus string }
		}
		b.call("GET", "/api/v2/media-servers", nil, &list)
		return len(list.Rows) == 1 && list.Rows[0].AgentStatus == "online" && list.Rows[0].EngineStatus == "running"
	}) {
		return fmt.Errorf("the media server was not online within 120 s; agent log:\n%s", b.agentOutput())
	}
	var proc struct{ Pid int }
	if st, body, err := b.call("GET", "/api/v2/node/engine/process?nodeId=media-1", nil, &proc); err != nil || st != 200 || proc.Pid == 0 {
		return fmt.Errorf("engine process: %d %s %w", st, body, err)
	}
	b.enginePid = proc.Pid
	return nil
}

// machine is benchdoc.Machine with the machine's CPUs (this process may
// run pinned to one).
func (b *bench) machine() string {
	return strings.Replace(benchdoc.Machine(), fmt.Sprintf(", %d cores,", runtime.NumCPU()), fmt.Sprintf(", %d cores,", b.cpus), 1)
}

func (b *bench) agentOutput() string {
	out, _ := os.ReadFile(filepath.Join(b.dir, "agent.log"))
	return testkit.Tail(string(out), 3000)
}

func (b *bench) stop() {
	for i := len(b.stops) - 1; i >= 0; i-- {
		b.stops[i]()
	}
	if b.agent != nil {
		b.agent.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { b.agent.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			b.agent.Process.Kill()
			<-done
		}
		b.agentLog.Close()
	}
	if b.node != nil {
		b.node.Shutdown()
	}
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

// call is the business backend's (and the operator's) API call.
func (b *bench) call(method, path string, body, out any) (int, []byte, error) {
	return benchdoc.Call(b.api, b.token, method, path, body, out)
}

func freeUDP() string {
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer c.Close()
	return c.LocalAddr().String()
}

// loadAverage is the machine's load averages (1, 5, 15 minutes).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 0, 64)
}
