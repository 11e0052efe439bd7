// Package testkit is what the cross-role test suites (test/e2e,
// test/adversarial) share to run real peers on loopback: free ports and
// RTP ranges, polling, the svc processes they start with their output, the
// node agent's arguments, and GStreamer's RTSP server (test/peers) as a
// camera. A missing peer fails the test; none is skipped.
package testkit

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/svcplatform/svc/agent/rtpport"
	"github.com/svcplatform/svc/controlplane/apitoken"
	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
)

// FreeAddr is a loopback address with a port nobody listens on now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Eventually polls cond until it holds or the time is up.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %s", what, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Output collects what a process or a logger writes, safe for concurrent
// use (it is a zapcore.WriteSyncer too).
type Output struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

// Sync implements zapcore.WriteSyncer.
func (o *Output) Sync() error { return nil }

func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// Process is a child svc process with its output collected.
type Process struct {
	Cmd *exec.Cmd
	Out *Output
	// Done is closed when the process has exited; Err is then its result.
	Done chan struct{}
	Err  error
}

// StartProcess runs bin with args until the test ends (SIGTERM, then
// SIGKILL after 15 s), and shows the end of its output when the test failed.
func StartProcess(t testing.TB, bin string, args ...string) *Process {
	t.Helper()
	p := &Process{Cmd: exec.Command(bin, args...), Out: &Output{}, Done: make(chan struct{})}
	p.Cmd.Stdout, p.Cmd.Stderr = p.Out, p.Out
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.Err = p.Cmd.Wait()
		close(p.Done)
	}()
	t.Cleanup(func() {
		p.Cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.Done:
		case <-time.After(15 * time.Second):
			p.Cmd.Process.Kill()
			<-p.Done
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", strings.Join(args, " "), Tail(p.Out.String(), 8000))
		}
	})
	return p
}

// Tail is the last n bytes of s.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// FreeRTPRange is the first port of 100 free ones for an engine's RTP
// range, below the kernel's ephemeral ports (which other tests'
// connections take).
func FreeRTPRange(t testing.TB) int {
	t.Helper()
	for start := 26000; start < 32700; start += 100 {
		ok := true
		for p := start; p < start+100 && ok; p += 9 {
			ok = rtpport.PortFree(p)
		}
		if ok {
			return start
		}
	}
	t.Fatal("no free RTP range")
	return 0
}

// AgentArgs are the arguments of `svc agent run` for an enrolled agent in
// dataDir, on loopback ports of its own, with short intervals for tests.
func AgentArgs(t testing.TB, dataDir string) []string {
	rtp := FreeRTPRange(t)
	return []string{"agent", "run", "--data-dir", dataDir, "--log-level", "debug",
		"--engine-control-addr", FreeAddr(t), "--engine-http-addr", FreeAddr(t), "--engine-rtsp-addr", FreeAddr(t),
		"--engine-webrtc-addr", FreeAddr(t), "--rtp-port-min", strconv.Itoa(rtp), "--rtp-port-max", strconv.Itoa(rtp + 99), "--sysctl-dir", filepath.Join(dataDir, "sysctl.d"),
		"--heartbeat-interval", "500ms", "--poll-wait", "5s", "--engine-backoff-min", "500ms"}
}

// Camera is GStreamer's RTSP server of test/peers standing in for an IP
// camera (mounts /h264, /h265, ... as the script lists them).
type Camera struct {
	Port           int
	User, Password string
}

// StartCamera runs the camera with a user, a password and "digest" or
// "basic" authentication, until the test ends.
func StartCamera(t testing.TB, user, password, auth string) *Camera {
	t.Helper()
	const python = "/usr/bin/python3"
	if _, err := exec.LookPath(python); err != nil {
		t.Fatalf("%s with gi is required for the camera peer (scripts/install-deps.sh test): %v", python, err)
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "peers", "gst_rtsp_server.py")
	addr := FreeAddr(t)
	port, _ := strconv.Atoi(addr[strings.LastIndexByte(addr, ':')+1:])
	cmd := exec.Command(python, script, "--port", strconv.Itoa(port), "--user", user, "--password", password, "--auth", auth)
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the camera: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready") {
				ready <- true
				break
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatalf("the camera did not start: %s", stderr.String())
	}
	return &Camera{Port: port, User: user, Password: password}
}

// URL is a mount's URL with the camera's credentials.
func (c *Camera) URL(mount string) string {
	return "rtsp://" + c.User + ":" + c.Password + "@127.0.0.1:" + strconv.Itoa(c.Port) + "/" + mount
}

// NodeConfig is a control node's configuration for a test: id, a fresh
// data directory, loopback ports of its own, and short heartbeat and
// delivery deadlines.
func NodeConfig(t testing.TB, id string) config.Config {
	t.Helper()
	cfg := config.Defaults()
	cfg.NodeID, cfg.DataDir = id, t.TempDir()
	cfg.HTTPAddr, cfg.RaftAddr, cfg.AgentAddr = FreeAddr(t), FreeAddr(t), FreeAddr(t)
	cfg.ShutdownGrace = 2 * time.Second
	cfg.NodeHeartbeatTTL, cfg.CommandVisibility = 3*time.Second, 2*time.Second
	return cfg
}

// WriteToken writes an API token record through the store, as a test's
// setup step rather than through the API, owned by owner (a user id, or a
// name of no user), and waits until every member has it. It returns the
// token and its id.
func WriteToken(t testing.TB, node *raftnode.Node, owner string, perms ...string) (token, id string) {
	t.Helper()
	tok, err := apitoken.New()
	if err != nil {
		t.Fatal(err)
	}
	id = fmt.Sprintf("t-%d", time.Now().UnixNano())
	op, err := apitoken.Put(apitoken.Record{TokenID: id, Name: "test", OwnerUserID: owner, Digest: apitoken.Digest(tok), TokenPrefix: tok[:12],
		Permissions: perms, CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := node.Txn(ctx, store.TxnRequest{Then: []store.Op{op}})
	if err != nil {
		t.Fatal(err)
	}
	if err := node.WaitMembersApplied(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	return tok, id
}
