package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// TestEngineHooksSurviveTheirControlNode: in a 3-node cluster the engine's
// hooks go to the control node its agent enrolled through. That node is
// killed with SIGKILL; a new player of the engine must still be authorised
// (and a forged ticket refused) within 5 s, by the two nodes left.
func TestEngineHooksSurviveTheirControlNode(t *testing.T) {
	bin := svcbin.Build(t)
	var dataDir1 string
	cp := startControlNode(t, func(c *config.Config) { dataDir1 = c.DataDir })
	keyFile := filepath.Join(dataDir1, "cluster.key")
	type member struct {
		proc           *process
		api, agentAddr string
	}
	join := func(id string) member {
		m := member{api: freeAddr(t), agentAddr: freeAddr(t)}
		m.proc = startProcess(t, bin, "server", "--node-id", id, "--data-dir", filepath.Join(t.TempDir(), id), "--http-addr", m.api,
			"--raft-addr", freeAddr(t), "--agent-addr", m.agentAddr, "--cluster-key-file", keyFile, "--join", cp.api,
			"--node-heartbeat-ttl", "3s", "--command-visibility", "2s")
		return m
	}
	n2, n3 := join("n2"), join("n3")
	testkit.Eventually(t, 60*time.Second, "three voting members", func() bool {
		var st struct {
			Members []struct{ NodeID, Suffrage string }
		}
		cp.call("GET", "/api/v2/cluster/status", nil, &st)
		return len(st.Members) == 3
	})

	cam := startCamera(t)
	en := cp.enroll("media-1", nil)
	dataDir := filepath.Join(t.TempDir(), "agent")
	// The agent enrolls through n2, so its engine's hooks go to n2.
	if out, err := runProcess(bin, "agent", "enroll", "--server", "https://"+n2.agentAddr, "--code", en.Code, "--ca-hash", en.CaHash, "--data-dir", dataDir); err != nil {
		t.Fatalf("enroll through n2: %v %s", err, out)
	}
	startProcess(t, bin, agentArgs(t, dataDir)...)
	testkit.Eventually(t, 60*time.Second, "the media server online", func() bool {
		m := cp.mediaServer("media-1")
		return m.AgentStatus == "online" && m.EngineStatus == "running"
	})
	engineYAML := filepath.Join(dataDir, "engine", "engine.yaml")
	testkit.Eventually(t, 30*time.Second, "the engine's hooks going to n2 with n1 and n3 as fallbacks", func() bool {
		b, _ := os.ReadFile(engineYAML)
		s := string(b)
		return strings.Contains(s, "url: https://"+n2.agentAddr) && strings.Contains(s, "fallbackUrls:") &&
			strings.Contains(s, n3.agentAddr) && strings.Contains(s, cp.s.AgentAddr())
	})

	var ch struct{ ChannelID string }
	if st := cp.call("POST", "/api/v2/channels", map[string]any{"name": "Door", "protocol": "rtsp", "mediaServerId": "media-1",
		"sourceUrl": fmt.Sprintf("rtsp://cam:camPa55word@127.0.0.1:%d/h264", cam.port), "app": "live", "stream": "door"}, &ch); st != 200 {
		t.Fatalf("create channel: %d", st)
	}
	be := backend{t: t, api: cp.api, token: cp.newToken("channels.view", "streams.view", "streams.play", "channels.manage")}
	if st, body := be.call("POST", "/api/v2/third-party/channels/"+ch.ChannelID+"/start", nil, nil); st != 200 {
		t.Fatalf("start: %d %s", st, body)
	}
	testkit.Eventually(t, 60*time.Second, "the stream Online", func() bool {
		var ss struct{ Total int }
		be.call("GET", "/api/v2/third-party/streams?streamId=door&state=Online", nil, &ss)
		return ss.Total == 1
	})
	leaseURL := func() string {
		var l lease
		if st, body := be.call("POST", "/api/v2/third-party/channels/"+ch.ChannelID+"/playback-lease", map[string]any{"protocols": []string{"http-flv"}}, &l); st/100 != 2 {
			t.Fatalf("lease: %d %s", st, body)
		}
		return l.Sources[0].URL
	}
	if r, err := probe(t, leaseURL(), 1); err != nil || r.packets == 0 {
		t.Fatalf("a player before the kill: %v %+v", err, r)
	}

	killed := time.Now()
	if err := n2.proc.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-n2.proc.Done
	url := leaseURL() // through n1, which is alive
	var played time.Duration
	for time.Since(killed) < 20*time.Second {
		if r, err := probe(t, url, 1); err == nil && r.packets > 0 {
			played = time.Since(killed)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if played == 0 {
		t.Fatal("no new player was authorised within 20 s of killing the hooks' control node")
	}
	t.Logf("a new player was authorised %s after its hooks' control node was killed", played.Round(time.Millisecond))
	if played > 5*time.Second {
		t.Errorf("authorisation took %s after the kill, want within 5 s", played)
	}
	forged := url[:len(url)-1] + map[bool]string{true: "A", false: "B"}[!strings.HasSuffix(url, "A")]
	if _, err := probe(t, forged, 1); err == nil {
		t.Fatal("a forged ticket played after the failover")
	}
}
