// Package peers starts the independent peers the end-to-end tests and
// benchmarks talk to. The GStreamer RTSP server (gst_rtsp_server.py, run by
// Debian's /usr/bin/python3, which has gi) stands in for an IP camera.
package peers

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Python is Debian's own python3, the one with GStreamer's gi bindings.
const Python = "/usr/bin/python3"

// Camera is a running GStreamer RTSP server on loopback.
type Camera struct {
	Port int
	cmd  *exec.Cmd
}

// StartCamera starts the camera on a free port with Digest authentication
// for user and password, and waits until it listens.
func StartCamera(user, password string) (*Camera, error) {
	if _, err := exec.LookPath(Python); err != nil {
		return nil, fmt.Errorf("%s with gi is required for the camera peer (scripts/install-deps.sh test): %w", Python, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "gst_rtsp_server.py")
	cmd := exec.Command(Python, script, "--port", strconv.Itoa(port), "--user", user, "--password", password, "--auth", "digest")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the camera: %w", err)
	}
	c := &Camera{Port: port, cmd: cmd}
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
		return c, nil
	case <-time.After(20 * time.Second):
		c.Stop()
		return nil, fmt.Errorf("the camera did not start: %s", stderr.String())
	}
}

// Stop kills the camera.
func (c *Camera) Stop() {
	c.cmd.Process.Kill()
	c.cmd.Wait()
}
