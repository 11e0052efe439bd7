package adversarial

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
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
	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/mediaengine/rtsp"
	"github.com/svcplatform/svc/test/svcbin"
)

// mediaHost is a control node with one enrolled media host: `svc agent
// run` as a process, which runs the engine.
type mediaHost struct {
	*node
	super    string
	agentDir string
	agentOut *logBuffer
}

const mediaServerID = "media-1"

// startMediaHost starts a control node (with a one-second body deadline:
// the agent's long polls must not be cut by it) and enrolls a media host.
func startMediaHost(t *testing.T, id string) *mediaHost {
	t.Helper()
	bin := svcbin.Build(t)
	n := startNode(t, id, "", "", func(c *config.Config) { c.RequestBodyTimeout = time.Second })
	h := &mediaHost{node: n, super: n.token("*"), agentDir: filepath.Join(t.TempDir(), "agent"), agentOut: &logBuffer{}}
	var en struct{ Code, CaHash, AgentServerUrl string }
	if a := n.call("POST", "/api/v2/system/lifecycle/agents/"+mediaServerID+"/enrollment", h.super, nil); a.status != 200 {
		t.Fatalf("enrollment code: %s", a)
	} else {
		a.decode(t, &en)
	}
	if out, err := exec.Command(bin, "agent", "enroll", "--server", en.AgentServerUrl, "--code", en.Code, "--ca-hash", en.CaHash, "--data-dir", h.agentDir).CombinedOutput(); err != nil {
		t.Fatalf("enroll: %v %s", err, out)
	}
	rtp := freeRTPRange(t)
	cmd := exec.Command(bin, "agent", "run", "--data-dir", h.agentDir, "--log-level", "debug",
		"--engine-control-addr", freeAddr(t), "--engine-http-addr", freeAddr(t), "--engine-rtsp-addr", freeAddr(t),
		"--rtp-port-min", strconv.Itoa(rtp), "--rtp-port-max", strconv.Itoa(rtp+99), "--sysctl-dir", filepath.Join(h.agentDir, "sysctl.d"),
		"--heartbeat-interval", "500ms", "--poll-wait", "5s", "--engine-backoff-min", "500ms")
	cmd.Stdout, cmd.Stderr = h.agentOut, h.agentOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	eventually(t, 60*time.Second, "the media server online", func() bool {
		var list struct {
			Rows []struct{ MediaServerID, AgentStatus, EngineStatus string }
		}
		n.call("GET", "/api/v2/media-servers", h.super, nil).decode(t, &list)
		for _, m := range list.Rows {
			if m.MediaServerID == mediaServerID && m.AgentStatus == "online" && m.EngineStatus == "running" {
				return true
			}
		}
		return false
	})
	return h
}

func freeRTPRange(t *testing.T) int {
	// Below the kernel's ephemeral ports, which other tests' connections take.
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

// channel is what a channel answer holds for these tests.
type channel struct {
	ChannelID, SourceURL, ActualState string
	HasSourceCredentials              bool
	Retry                             struct{ LastError *string }
}

func (h *mediaHost) channel(id string) channel {
	h.t.Helper()
	var ch channel
	h.call("GET", "/api/v2/channels/"+id, h.super, nil).decode(h.t, &ch)
	return ch
}

// camera is the GStreamer RTSP server of test/peers standing in for an IP
// camera, with Digest authentication and a password of its own.
type camera struct {
	port           int
	user, password string
}

func randomPassword(t *testing.T) string {
	b := make([]byte, 9)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "Cam-" + hex.EncodeToString(b)
}

func startCamera(t *testing.T) *camera {
	t.Helper()
	const python = "/usr/bin/python3"
	if _, err := exec.LookPath(python); err != nil {
		t.Fatalf("%s with gi is required for the camera peer (scripts/install-deps.sh test): %v", python, err)
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "peers", "gst_rtsp_server.py")
	addr := freeAddr(t)
	port, _ := strconv.Atoi(addr[strings.LastIndexByte(addr, ':')+1:])
	cam := &camera{port: port, user: "cam", password: randomPassword(t)}
	cmd := exec.Command(python, script, "--port", strconv.Itoa(port), "--user", cam.user, "--password", cam.password, "--auth", "digest")
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
	return cam
}

// url is the camera's stream URL with its credentials.
func (c *camera) url(mount string) string {
	return "rtsp://" + c.user + ":" + c.password + "@127.0.0.1:" + strconv.Itoa(c.port) + "/" + mount
}

// trap is an RTSP server that answers every request with a Basic
// challenge and keeps what it was sent: a host an attacker points a
// channel at, or someone on a camera's network path.
type trap struct {
	addr string
	mu   sync.Mutex
	seen []string // request lines and headers
	raw  bytes.Buffer
}

func startTrap(t *testing.T) *trap {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := &trap{addr: ln.Addr().String()}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go tr.serve(c)
		}
	}()
	return tr
}

func (tr *trap) serve(c net.Conn) {
	defer c.Close()
	r := rtsp.NewMessageReader(io.TeeReader(c, lockedWriter{tr}))
	w := bufio.NewWriter(c)
	var m rtsp.Message
	for r.Read(&m) == nil {
		if m.Request == nil {
			continue
		}
		tr.mu.Lock()
		tr.seen = append(tr.seen, m.Request.Method+" auth="+m.Request.Header.Get("Authorization"))
		tr.mu.Unlock()
		resp := &rtsp.Response{StatusCode: 401, Reason: "Unauthorized", Header: rtsp.Header{{Name: "CSeq", Value: m.Request.Header.Get("CSeq")},
			{Name: "WWW-Authenticate", Value: `Basic realm="camera"`}}}
		if m.Request.Header.Get("Authorization") != "" {
			resp.StatusCode, resp.Reason, resp.Header = 404, "Not Found", resp.Header[:1]
		}
		resp.Write(w)
		w.Flush()
	}
}

type lockedWriter struct{ tr *trap }

func (l lockedWriter) Write(p []byte) (int, error) {
	l.tr.mu.Lock()
	defer l.tr.mu.Unlock()
	return l.tr.raw.Write(p)
}

// requests are what the trap was asked so far, and every byte it got.
func (tr *trap) requests() ([]string, string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.seen...), tr.raw.String()
}
