package e2e

import (
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// TestEngineThatCannotStart: an engine whose control port is taken fails
// at start; the control plane records media.server.start_failed once (with
// the contract's reason), the agent backs off instead of storming, and once
// the port is free the engine starts and the media server comes online.
func TestEngineThatCannotStart(t *testing.T) {
	bin := svcbin.Build(t)
	cp := startControlNode(t, nil)
	en := cp.enroll("media-f", nil)
	dataDir := filepath.Join(t.TempDir(), "agent")
	if out, err := runProcess(bin, "agent", "enroll", "--server", en.AgentServerUrl, "--code", en.Code, "--ca-hash", en.CaHash, "--data-dir", dataDir); err != nil {
		t.Fatalf("enroll: %v %s", err, out)
	}
	blocker, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	args := agentArgs(t, dataDir)
	for i, a := range args {
		if a == "--engine-control-addr" {
			args[i+1] = blocker.Addr().String()
		}
	}
	agent := startProcess(t, bin, args...)
	testkit.Eventually(t, 20*time.Second, "start_failed event", func() bool { return len(cp.events("media.server.start_failed")) == 1 })
	var d map[string]any
	json.Unmarshal(cp.events("media.server.start_failed")[0].Data, &d)
	if d["NodeId"] != "media-f" || d["engineNodeId"] != "media-f" || d["reason"] != nodes.ReasonStartFailed || d["LastAction"] != "agent-start" {
		t.Fatalf("start_failed data %v", d)
	}
	time.Sleep(3 * time.Second)
	if n := len(cp.events("media.server.start_failed")); n != 1 {
		t.Fatalf("%d start_failed events: one per failure streak, not per attempt", n)
	}
	// Backoff 0.5 s, 1 s, 2 s, ...: a handful of attempts, not a storm.
	if attempts := strings.Count(agent.Out.String(), "engine start failed"); attempts < 2 || attempts > 5 {
		t.Fatalf("%d start attempts in about 3.5 s", attempts)
	}
	// Between attempts the engine is start_failed, during one starting.
	if ms := cp.mediaServer("media-f"); ms.Status != "offline" || (ms.EngineStatus != "start_failed" && ms.EngineStatus != "starting") {
		t.Fatalf("media server %+v", ms)
	}
	blocker.Close()
	testkit.Eventually(t, 20*time.Second, "media server online", func() bool { return cp.mediaServer("media-f").Status == "online" })
	if n := len(cp.events("media.server.started")); n != 1 {
		t.Fatalf("started events %d (a server never online before starts, it does not recover)", n)
	}
}
