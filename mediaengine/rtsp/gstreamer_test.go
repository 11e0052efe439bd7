package rtsp_test

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// gstServer is the GStreamer RTSP server of test/peers, started by a test.
type gstServer struct {
	t    *testing.T
	port int
	args []string
	cmd  *exec.Cmd
	done chan struct{}
}

// gstScript is the peer's path, found from this file's directory.
func gstScript(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "test", "peers", "gst_rtsp_server.py")
}

// startGStreamer starts the peer on a free port; extra are its flags
// (--user, --password, --auth).
func startGStreamer(t *testing.T, extra ...string) *gstServer {
	t.Helper()
	g := &gstServer{t: t, port: freePort(t), args: extra}
	g.start()
	t.Cleanup(g.stop)
	return g
}

func (g *gstServer) start() {
	g.t.Helper()
	// Debian's python3 has gi; a python earlier on PATH may not.
	const python = "/usr/bin/python3"
	if _, err := exec.LookPath(python); err != nil {
		g.t.Fatalf("%s is required for the GStreamer peer (scripts/install-deps.sh test): %v", python, err)
	}
	args := append([]string{gstScript(g.t), "--port", strconv.Itoa(g.port)}, g.args...)
	g.cmd = peerCommand(context.Background(), python, args...)
	stdout, _ := g.cmd.StdoutPipe()
	var stderr strings.Builder
	g.cmd.Stderr = &stderr
	if err := g.cmd.Start(); err != nil {
		g.t.Fatalf("start GStreamer peer: %v", err)
	}
	g.done = make(chan struct{})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		ok := false
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready") && !ok {
				ok = true
				ready <- true
			}
		}
		if !ok {
			ready <- false
		}
	}()
	go func() { g.cmd.Wait(); close(g.done) }()
	select {
	case ok := <-ready:
		if !ok {
			<-g.done
			g.t.Fatalf("GStreamer peer did not start: %s", stderr.String())
		}
	case <-time.After(20 * time.Second):
		g.t.Fatalf("GStreamer peer not ready: %s", stderr.String())
	}
}

func (g *gstServer) stop() {
	if g.cmd != nil && g.cmd.Process != nil {
		g.cmd.Process.Kill()
		<-g.done
		g.cmd = nil
	}
}

func (g *gstServer) url(userinfo, mount string) string {
	if userinfo != "" {
		userinfo += "@"
	}
	return "rtsp://" + userinfo + "127.0.0.1:" + strconv.Itoa(g.port) + "/" + mount
}

// runFor runs fn with a context that ends after d.
func runFor(d time.Duration, fn func(ctx context.Context)) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	fn(ctx)
}
