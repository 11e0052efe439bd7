package e2e

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/streams"
	"github.com/svcplatform/svc/test/svcbin"
	"github.com/svcplatform/svc/test/testkit"
)

// TestEngineCrashHeals kills the engine with SIGKILL while three channels
// are Online. The agent starts a new engine; the control plane must notice
// that the new process has none of the streams, say so (each stream goes
// offline, leases answer stream_not_ready rather than URLs that 404) and
// pull every channel again: all three play within 10 s of the kill.
func TestEngineCrashHeals(t *testing.T) {
	bin := svcbin.Build(t)
	cp := startControlNode(t, nil)
	cam := startCamera(t)
	cp.startMediaHost(bin, "media-1")
	be := backend{t: t, api: cp.api, token: cp.newToken("channels.view", "streams.view", "streams.play", "channels.manage")}
	var ids []string
	for i := 0; i < 3; i++ {
		var ch struct{ ChannelID string }
		if st := cp.call("POST", "/api/v2/channels", map[string]any{"name": fmt.Sprintf("cam %d", i), "protocol": "rtsp",
			"sourceUrl": fmt.Sprintf("rtsp://cam:camPa55word@127.0.0.1:%d/h264", cam.port), "app": "live", "stream": fmt.Sprintf("crash%d", i),
			"mediaServerId": "media-1"}, &ch); st != 200 {
			t.Fatalf("create channel: %d", st)
		}
		if st, body := be.call("POST", "/api/v2/third-party/channels/"+ch.ChannelID+"/start", nil, nil); st != 200 {
			t.Fatalf("start: %d %s", st, body)
		}
		ids = append(ids, ch.ChannelID)
	}
	online := func(stream string) bool {
		var ss struct{ Total int }
		be.call("GET", "/api/v2/third-party/streams?streamId="+stream+"&state=Online", nil, &ss)
		return ss.Total == 1
	}
	testkit.Eventually(t, 60*time.Second, "three streams Online", func() bool {
		return online("crash0") && online("crash1") && online("crash2")
	})
	offlineBefore := len(cp.events("media.stream.offline"))
	sessionOf := func(stream string) (id, state string) {
		var ss struct {
			Rows []struct{ SessionID, State string }
		}
		be.call("GET", "/api/v2/third-party/streams?streamId="+stream, nil, &ss)
		if len(ss.Rows) != 1 {
			return "", ""
		}
		return ss.Rows[0].SessionID, ss.Rows[0].State
	}
	names := []string{"crash0", "crash1", "crash2"}
	before := map[string]string{}
	for _, s := range names {
		before[s], _ = sessionOf(s)
	}

	// 1. kill -9 of the engine: the agent starts a new one at once.
	var proc struct{ Pid int }
	if st := cp.call("GET", "/api/v2/node/engine/process?nodeId=media-1", nil, &proc); st != 200 || proc.Pid == 0 {
		t.Fatalf("engine process: %d %+v", st, proc)
	}
	killed := time.Now()
	if err := syscall.Kill(proc.Pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", proc.Pid, err)
	}
	// Each stream comes back as a new session (the old one ended with the
	// engine) and plays.
	back := map[string]time.Duration{}
	for time.Since(killed) < 30*time.Second && len(back) < len(names) {
		for _, s := range names {
			if _, ok := back[s]; ok {
				continue
			}
			if id, st := sessionOf(s); st == "Online" && id != before[s] {
				back[s] = time.Since(killed)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, s := range names {
		d, ok := back[s]
		if !ok {
			t.Fatalf("%s did not come back as a new Online session within 30 s of the kill", s)
		}
		t.Logf("%s Online again %s after the kill", s, d.Round(time.Millisecond))
		if d > 10*time.Second {
			t.Errorf("%s came back only %s after the kill (want within 10 s)", s, d)
		}
	}
	for _, id := range ids {
		var l lease
		if st, body := be.call("POST", "/api/v2/third-party/channels/"+id+"/playback-lease", map[string]any{"protocols": []string{"http-flv"}}, &l); st/100 != 2 {
			t.Fatalf("lease after the crash: %d %s", st, body)
		}
		if r, err := probe(t, l.Sources[0].URL, 2); err != nil || r.packets == 0 {
			t.Fatalf("the stream does not play after the crash: %v %+v", err, r)
		}
	}
	if n := len(cp.events("media.stream.offline")) - offlineBefore; n < 3 {
		t.Errorf("%d media.stream.offline events after the crash, want 3", n)
	}
	if len(cp.events("media.server.crashed")) == 0 {
		t.Error("no media.server.crashed event")
	}

	// 2. While the engine is down (an operator's stop), nothing says Online
	// and no lease is handed out; the start brings every channel back.
	if st := cp.call("POST", "/api/v2/node/engine/process/stop?nodeId=media-1", map[string]any{"reason": "maintenance", "waitSeconds": 10}, nil); st/100 != 2 {
		t.Fatalf("engine stop: %d", st)
	}
	stopped := time.Now()
	testkit.Eventually(t, 5*time.Second, "every stream offline after the engine stopped", func() bool {
		for _, s := range names {
			if _, st := sessionOf(s); st == "Online" {
				return false
			}
		}
		return true
	})
	t.Logf("streams offline %s after the stop was acknowledged", time.Since(stopped).Round(time.Millisecond))
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		for _, id := range ids {
			st, body := be.call("POST", "/api/v2/third-party/channels/"+id+"/playback-lease", map[string]any{}, nil)
			if st != 409 || !strings.Contains(string(body), "stream_not_ready") {
				t.Fatalf("a lease while the engine is stopped: %d %s", st, body)
			}
			var ch struct{ ActualState string }
			cp.call("GET", "/api/v2/channels/"+id, nil, &ch)
			if ch.ActualState == "Online" {
				t.Fatalf("channel %s says Online while the engine is stopped", id)
			}
		}
	}
	if st := cp.call("POST", "/api/v2/node/engine/process/start?nodeId=media-1", map[string]any{"reason": "maintenance over", "waitSeconds": 10}, nil); st/100 != 2 {
		t.Fatalf("engine start: %d", st)
	}
	started := time.Now()
	testkit.Eventually(t, 10*time.Second, "every stream Online after the engine started", func() bool {
		for _, s := range names {
			if _, st := sessionOf(s); st != "Online" {
				return false
			}
		}
		return true
	})
	t.Logf("streams Online %s after the start was acknowledged", time.Since(started).Round(time.Millisecond))

	// 3. A hook that never arrived: the store says crash0 went offline while
	// the engine plays it. The heartbeats' stream count disagrees, and the
	// comparison with the engine's own list puts it right.
	if _, err := cp.s.Streams.Apply(context.Background(), streams.Change{MediaServerID: "media-1", App: "live", Stream: "crash0"}); err != nil {
		t.Fatal(err)
	}
	lost := time.Now()
	testkit.Eventually(t, 30*time.Second, "the lost stream Online again in the store", func() bool {
		_, st := sessionOf("crash0")
		var ch struct{ ActualState string }
		cp.call("GET", "/api/v2/channels/"+ids[0], nil, &ch)
		return st == "Online" && ch.ActualState == "Online"
	})
	t.Logf("a lost hook was repaired %s later", time.Since(lost).Round(time.Millisecond))
}
