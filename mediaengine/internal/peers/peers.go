// Package peers starts the real programs the engine's tests talk to
// (ffmpeg, gst-launch-1.0, GStreamer's RTSP server from test/peers) as
// children of the test binary on loopback. A missing peer fails the test
// with the package that provides it: the peers are declared test
// dependencies (scripts/install-deps.sh test), never a reason to skip.
package peers

import (
	"bufio"
	"bytes"
	"context"
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

	"github.com/svcplatform/svc/test/peers/chromium"
)

// Require returns the path of a peer program or fails the test.
func Require(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is required (scripts/install-deps.sh test installs it): %v", name, err)
	}
	return p
}

// Command is exec.CommandContext for a peer that must not outlive the
// test binary, even when the binary crashes before its cleanups run.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// Process is a peer running in the background.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}

	mu      sync.Mutex
	out     bytes.Buffer
	stopped bool
}

// Start runs a peer in the background for the test's lifetime; the test's
// cleanup kills it if it is still running.
func Start(t testing.TB, name string, args ...string) *Process {
	t.Helper()
	Require(t, name)
	p := &Process{cmd: Command(context.Background(), name, args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.Stop() })
	return p
}

// Write collects the peer's output.
func (p *Process) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.out.Len() < 1<<20 {
		p.out.Write(b)
	}
	return len(b), nil
}

// Output is what the peer printed so far.
func (p *Process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// Done is closed when the peer has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Stop kills the peer (once) and returns its output.
func (p *Process) Stop() string {
	p.mu.Lock()
	stopped := p.stopped
	p.stopped = true
	p.mu.Unlock()
	if !stopped {
		p.cmd.Process.Kill()
		<-p.done
	}
	return p.Output()
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// GStreamer is the RTSP server of test/peers/gst_rtsp_server.py, an
// implementation independent of ours (GstRtspServer). Its mounts are live
// 320x240 25 fps test sources; see the script for the list.
type GStreamer struct {
	t    testing.TB
	Port int
	args []string
	proc *Process
}

// StartGStreamer starts the peer on a free port; extra are its flags
// (--user, --password, --auth digest|basic).
func StartGStreamer(t testing.TB, extra ...string) *GStreamer {
	t.Helper()
	g := &GStreamer{t: t, Port: FreePort(t), args: extra}
	g.Start()
	return g
}

// gstPython is Debian's python3, which has gi; another python earlier on
// PATH may not.
const gstPython = "/usr/bin/python3"

// gstScript is the peer's path, found from this file's directory.
func gstScript() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "test", "peers", "gst_rtsp_server.py")
}

// GstWHEPClient is test/peers/gst_whep_client.py, a WHEP client on
// GStreamer's webrtcbin, with Debian's python3; see the script for what it
// prints.
func GstWHEPClient(t testing.TB, url string, seconds int) *Process {
	t.Helper()
	script := filepath.Join(filepath.Dir(gstScript()), "gst_whep_client.py")
	return Start(t, gstPython, script, "--url", url, "--seconds", strconv.Itoa(seconds))
}

// Start (re)starts the server on its port and waits until it listens.
func (g *GStreamer) Start() {
	g.t.Helper()
	if _, err := exec.LookPath(gstPython); err != nil {
		g.t.Fatalf("%s is required for the GStreamer peer (scripts/install-deps.sh test): %v", gstPython, err)
	}
	args := append([]string{gstScript(), "--port", strconv.Itoa(g.Port)}, g.args...)
	// A port just released by a killed server can take a moment to bind.
	deadline := time.Now().Add(20 * time.Second)
	for {
		p := &Process{cmd: Command(context.Background(), gstPython, args...), done: make(chan struct{})}
		stdout, err := p.cmd.StdoutPipe()
		if err != nil {
			g.t.Fatal(err)
		}
		p.cmd.Stderr = p
		if err := p.cmd.Start(); err != nil {
			g.t.Fatalf("start the GStreamer peer: %v", err)
		}
		ready := make(chan bool, 1)
		go func() {
			sc := bufio.NewScanner(stdout)
			ok := false
			for sc.Scan() {
				if !ok && strings.HasPrefix(sc.Text(), "ready") {
					ok = true
					ready <- true
				}
			}
			if !ok {
				ready <- false
			}
		}()
		go func() { p.cmd.Wait(); close(p.done) }()
		g.t.Cleanup(func() { p.Stop() })
		select {
		case ok := <-ready:
			if ok {
				g.proc = p
				return
			}
			<-p.done
		case <-time.After(time.Until(deadline)):
			p.Stop()
			g.t.Fatalf("the GStreamer peer is not ready after 20 s: %s", p.Output())
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("the GStreamer peer did not start: %s", p.Output())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Stop kills the server, as a camera losing power would go.
func (g *GStreamer) Stop() {
	if g.proc != nil {
		g.proc.Stop()
		g.proc = nil
	}
}

// URL is the rtsp:// URL of a mount, with userinfo ("user:password") when
// not empty.
func (g *GStreamer) URL(userinfo, mount string) string {
	if userinfo != "" {
		userinfo += "@"
	}
	return "rtsp://" + userinfo + "127.0.0.1:" + strconv.Itoa(g.Port) + "/" + strings.TrimPrefix(mount, "/")
}

// StartChromium opens url in a headless Chromium with its own profile in
// a temporary directory, ready for WebRTC on loopback
// (chromium.WebRTCFlags).
func StartChromium(t testing.TB, url string) *Process {
	t.Helper()
	return Start(t, chromium.Path, chromium.Args(t.TempDir(), url, chromium.WebRTCFlags...)...)
}
