package mediaengine

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/shared/engineapi"
	"github.com/svcplatform/svc/test/testkit"
)

// hookReceiver is a real HTTP hook receiver for engine tests.
type hookReceiver struct {
	mu  sync.Mutex
	got map[string][]json.RawMessage
}

func (h *hookReceiver) count(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.got[name])
}

func (h *hookReceiver) last(name string, v any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	json.Unmarshal(h.got[name][len(h.got[name])-1], v)
}

func startHookReceiver(t *testing.T) (*hookReceiver, string) {
	h := &hookReceiver{got: map[string][]json.RawMessage{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var raw json.RawMessage
		json.NewDecoder(r.Body).Decode(&raw)
		name := r.URL.Path[len("/hooks/"):]
		h.mu.Lock()
		h.got[name] = append(h.got[name], raw)
		h.mu.Unlock()
		var body struct {
			Params map[string]string `json:"params"`
		}
		json.Unmarshal(raw, &body)
		ans := engineapi.HookAnswer{}
		switch body.Params["svc_ticket"] {
		case "good":
			ans = engineapi.HookAnswer{Allow: true, LeaseID: "lease-7"}
		case "slow":
			time.Sleep(time.Second)
			ans.Allow = true
		default:
			ans.Reason = "unknown ticket"
		}
		json.NewEncoder(w).Encode(ans)
	}))
	t.Cleanup(srv.Close)
	return h, srv.URL + "/hooks"
}

func TestHooksGatePlayersAndReportStreams(t *testing.T) {
	rc, url := startHookReceiver(t)
	te := startEngine(t, func(c *engineapi.Config) {
		c.Hooks.URL = url
		c.Hooks.Timeout = engineapi.Duration(300 * time.Millisecond)
		c.Hooks.FlowReportInterval = engineapi.Duration(time.Hour)
		c.NoReaderTimeout = engineapi.Duration(500 * time.Millisecond)
	})
	testkit.Eventually(t, 5*time.Second, "on_stream_changed for the demo stream", func() bool { return rc.count(engineapi.HookOnStreamChanged) > 0 })
	var changed engineapi.StreamChangedHook
	rc.last(engineapi.HookOnStreamChanged, &changed)
	if !changed.Registered || changed.Stream != "demo" || len(changed.Tracks) != 2 || changed.MediaServerID != "n1" || len(changed.Schemas) != 4 {
		t.Fatalf("on_stream_changed %+v", changed)
	}
	// The frame rate is there at registration, from the clip's SPS (the
	// hub has not measured a second of frames yet).
	for _, tr := range changed.Tracks {
		if tr.Kind == "video" && tr.FPS != 25 {
			t.Fatalf("on_stream_changed reports the video track at %v fps, want 25", tr.FPS)
		}
	}
	testkit.Eventually(t, 5*time.Second, "on_stream_none_reader", func() bool { return rc.count(engineapi.HookOnStreamNoneReader) > 0 })

	for _, tc := range []struct {
		ticket string
		status int
	}{{"bad", http.StatusForbidden}, {"slow", http.StatusForbidden}, {"good", http.StatusOK}} {
		for _, path := range []string{"/live/demo.live.flv", "/live/demo.live.mp4", "/live/demo/hls.m3u8"} {
			resp, err := http.Get(te.mediaURL(path + "?svc_ticket=" + tc.ticket))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("%s with ticket %q: %d, want %d", path, tc.ticket, resp.StatusCode, tc.status)
			}
		}
	}
	var play engineapi.PlayHook
	rc.last(engineapi.HookOnPlay, &play)
	if play.Params["svc_ticket"] != "good" || play.App != "live" || play.Stream != "demo" || play.Protocol == "" || play.RemoteAddr == "" {
		t.Fatalf("on_play body %+v", play)
	}
	// The positive answer is cached: playing again costs no hook call.
	before := rc.count(engineapi.HookOnPlay)
	c := openFLV(t, te.mediaURL("/live/demo.live.flv?svc_ticket=good"))
	if c.status != 200 || rc.count(engineapi.HookOnPlay) != before {
		t.Fatalf("cached play: status %d, %d new hook calls", c.status, rc.count(engineapi.HookOnPlay)-before)
	}
	var list engineapi.PlayerList
	testkit.Eventually(t, 3*time.Second, "the player with its lease", func() bool {
		te.control(t, "GET", engineapi.PathPlayers+"?leaseId=lease-7", nil, &list)
		return len(list.Players) >= 1
	})
	var res engineapi.KickResult
	te.control(t, "POST", engineapi.PathPlayersKick, engineapi.KickRequest{LeaseID: "lease-7"}, &res)
	if res.Kicked < 1 || !c.ended(3*time.Second) {
		t.Fatalf("kick by lease: %+v", res)
	}
	testkit.Eventually(t, 5*time.Second, "the final flow report", func() bool { return rc.count(engineapi.HookOnFlowReport) > 0 })
	var flow engineapi.FlowReportHook
	rc.last(engineapi.HookOnFlowReport, &flow)
	if len(flow.Players) == 0 || !flow.Players[0].Final || flow.Players[0].LeaseID != "lease-7" {
		t.Fatalf("flow report %+v", flow)
	}
	testkit.Eventually(t, 12*time.Second, "on_server_keepalive", func() bool { return rc.count(engineapi.HookOnServerKeepalive) > 0 })
}

// A track whose parameter sets declare no frame rate the engine reads (our
// H.265 SPS parser stops before the VUI) is registered without one, then
// reported again once the hub has measured it.
func TestStreamChangedReportsMeasuredFrameRate(t *testing.T) {
	var mu sync.Mutex
	var changes []engineapi.StreamChangedHook
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ans := engineapi.HookAnswer{Allow: true}
		switch r.URL.Path {
		case "/hooks/" + engineapi.HookOnRTSPAuth:
			ans.Password = "pw"
		case "/hooks/" + engineapi.HookOnStreamChanged:
			var h engineapi.StreamChangedHook
			json.NewDecoder(r.Body).Decode(&h)
			mu.Lock()
			if h.Stream == "h265" {
				changes = append(changes, h)
			}
			mu.Unlock()
		}
		json.NewEncoder(w).Encode(ans)
	}))
	t.Cleanup(srv.Close)
	te := startEngine(t, func(c *engineapi.Config) {
		noDemo(c)
		c.Hooks.URL = srv.URL + "/hooks"
		c.Hooks.FlowReportInterval = engineapi.Duration(time.Hour)
	})
	ffmpegPublish(t, "hevc", "tcp", "rtsp://cam:pw@"+te.RTSPAddr().String()+"/live/h265", 10)
	videoFPS := func(h engineapi.StreamChangedHook) float64 {
		for _, tr := range h.Tracks {
			if tr.Kind == "video" {
				return tr.FPS
			}
		}
		return -1
	}
	testkit.Eventually(t, 10*time.Second, "a second on_stream_changed with the measured frame rate", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(changes) >= 2
	})
	mu.Lock()
	defer mu.Unlock()
	if !changes[0].Registered || videoFPS(changes[0]) != 0 {
		t.Fatalf("first registration %+v", changes[0])
	}
	if fps := videoFPS(changes[1]); !changes[1].Registered || fps < 23 || fps > 27 {
		t.Fatalf("the second registration reports %v fps, want about 25: %+v", fps, changes[1])
	}
}
