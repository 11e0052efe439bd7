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
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/mediaengine/rtsp"
	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
	"github.com/svcplatform/svc/test/testkit/cluster"
)

// mediaHost is a control node with one enrolled media host: `svc agent
// run` as a process, which runs the engine.
type mediaHost struct {
	*node
	super    string
	agentDir string
	agent    *testkit.Process
}

const mediaServerID = "media-1"

// startMediaHost starts a control node (with a one-second body deadline:
// the agent's long polls must not be cut by it) and enrolls a media host.
func startMediaHost(t *testing.T, id string) *mediaHost {
	t.Helper()
	bin := svcbin.Build(t)
	n := startNode(t, id, "", "", func(c *config.Config) { c.RequestBodyTimeout = time.Second })
	h := &mediaHost{node: n, super: n.token("*"), agentDir: filepath.Join(t.TempDir(), "agent")}
	var en struct{ Code, CaHash, AgentServerUrl string }
	if a := n.call("POST", "/api/v2/system/lifecycle/agents/"+mediaServerID+"/enrollment", h.super, nil); a.status != 200 {
		t.Fatalf("enrollment code: %s", a)
	} else {
		a.decode(t, &en)
	}
	enroll := exec.Command(bin, "agent", "enroll", "--server", en.AgentServerUrl, "--code", en.Code, "--ca-hash", en.CaHash, "--data-dir", h.agentDir)
	if out, err := enroll.CombinedOutput(); err != nil {
		t.Fatalf("enroll: %v %s", err, out)
	}
	h.agent = testkit.StartProcess(t, bin, cluster.AgentArgs(t, h.agentDir)...)
	testkit.Eventually(t, 60*time.Second, "the media server online", func() bool {
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

func randomPassword(t *testing.T) string {
	b := make([]byte, 9)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "Cam-" + hex.EncodeToString(b)
}

// startCamera runs GStreamer's RTSP server as a Digest camera with a
// password of its own.
func startCamera(t *testing.T) *testkit.Camera {
	t.Helper()
	return testkit.StartCamera(t, "cam", randomPassword(t), "digest")
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
