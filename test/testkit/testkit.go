// Package testkit is what every test suite shares to run real peers on
// loopback: ports (AnyPort for servers that report what they bound; free
// ports and RTP ranges for child processes that cannot), one Eventually for
// everything that happens asynchronously, the processes tests start with
// their output, and GStreamer's RTSP server (test/peers) as a camera. It
// depends on no role, so the engine's tests use it as the control plane's
// do; what needs a control node is in testkit/cluster. A missing peer
// fails the test; none is skipped.
package testkit

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// AnyPort is a loopback listen address whose port the system picks; a
// server given it reports the port it got. Prefer it to FreeAddr wherever
// the server under test reads its address back.
const AnyPort = "127.0.0.1:0"

// FreeAddr is a loopback address with a port nobody listens on now,
// claimed for the test (FreePort).
func FreeAddr(t testing.TB) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(FreePort(t))
}

// Eventually fails the test when cond does not hold within the time; it
// is the one way tests wait for something asynchronous.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Within(within, cond) {
		t.Fatalf("%s did not happen within %s", what, within)
	}
}

// Within polls cond every 20 ms until it holds (true) or the time is up
// (false): Eventually for callers that explain a failure themselves, and
// for benchmarks, which have no testing.T.
func Within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
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
// connections take). Test binaries of several packages run at once and
// their engines bind the range only later, so a range is claimed with a
// lock file held until the test ends (the kernel drops it if the process
// dies), and the ranges are tried from a random one on.
func FreeRTPRange(t testing.TB) int {
	t.Helper()
	return claimPorts(t, "rtp-range", 26000, 32600, 100)
}

// FreePort is a port free on UDP and TCP for a server the test starts
// later (a SIP server, a SIPp device), claimed the way FreeRTPRange claims
// its ranges and from ports below those: a port the kernel picked as
// ephemeral could be taken by another test's outgoing connection before
// the server binds it.
func FreePort(t testing.TB) int {
	t.Helper()
	return claimPorts(t, "port", 20000, 25999, 1)
}

// claimPorts claims size ports from first (a multiple of size above it, up
// to last) with a lock file named by kind, held until the test ends.
func claimPorts(t testing.TB, kind string, first, last, size int) int {
	t.Helper()
	n := (last-first)/size + 1
	from := rand.IntN(n)
	for i := 0; i < n; i++ {
		start := first + ((from+i)%n)*size
		lock, err := os.OpenFile(filepath.Join(os.TempDir(), fmt.Sprintf("svc-test-%s-%d.lock", kind, start)), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			lock.Close() // another running test holds it
			continue
		}
		ok := portFree(start) && (size == 1 || portFree(start+1))
		for p := start + 2; p < start+size && ok; p += 9 {
			ok = portFree(p)
		}
		if !ok {
			lock.Close()
			continue
		}
		t.Cleanup(func() { lock.Close() })
		return start
	}
	t.Fatalf("no free %s", kind)
	return 0
}

// portFree says whether nothing listens on port, UDP or TCP.
func portFree(port int) bool {
	u, err := net.ListenPacket("udp", ":"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	u.Close()
	l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
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
