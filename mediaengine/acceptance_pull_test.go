package mediaengine

import (
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/internal/mediaprobe"
	"github.com/svcplatform/svc/mediaengine/internal/peers"
	"github.com/svcplatform/svc/shared/engineapi"
)

// addProxy starts a pull proxy through the control API and waits until its
// stream is live with every track ready.
func addProxy(t *testing.T, te *testEngine, req engineapi.AddProxyRequest) engineapi.StreamInfo {
	t.Helper()
	var info engineapi.ProxyInfo
	if st := te.control(t, "POST", engineapi.PathProxies, req, &info); st != 200 {
		t.Fatalf("add proxy %s: status %d", req.ID, st)
	}
	s := waitStreamReady(t, te, req.App, req.Stream, 30*time.Second)
	if s.Origin != "pull" {
		t.Fatalf("stream origin %q, want pull", s.Origin)
	}
	return s
}

// proxyInfo reads one proxy from the control API's listing.
func proxyInfo(t *testing.T, te *testEngine, id string) engineapi.ProxyInfo {
	t.Helper()
	var l engineapi.ProxyList
	te.control(t, "GET", engineapi.PathProxies, nil, &l)
	for _, p := range l.Proxies {
		if p.ID == id {
			return p
		}
	}
	t.Fatalf("proxy %s is not listed (%+v)", id, l.Proxies)
	return engineapi.ProxyInfo{}
}

// TestAcceptancePullsFromGStreamer has the engine pull GStreamer's RTSP
// server (an independent implementation) through the control API over TCP,
// over UDP and with Digest authentication, and reads every output of each
// pulled stream with ffprobe for 11 s.
func TestAcceptancePullsFromGStreamer(t *testing.T) {
	t.Parallel()
	open := peers.StartGStreamer(t)
	locked := peers.StartGStreamer(t, "--user", "cam", "--password", "s3cr3t!", "--auth", "digest")
	for _, tc := range []struct {
		name, url, transport string
	}{
		{"tcp", open.URL("", "h264"), "tcp"},
		{"udp", open.URL("", "h264"), "udp"},
		{"digest", locked.URL("cam:s3cr3t%21", "h264"), "auto"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			te := startEngine(t, noDemo)
			s := addProxy(t, te, engineapi.AddProxyRequest{ID: tc.name, URL: tc.url, App: "cam", Stream: tc.name, Transport: tc.transport})
			if trackCodecs(s) != "video:H264,audio:AAC" {
				t.Fatalf("tracks %s", trackCodecs(s))
			}
			if p := proxyInfo(t, te, tc.name); p.State != "live" || p.URL != engineapi.RedactURL(tc.url) {
				t.Fatalf("proxy %+v", p)
			}
			probeOutputs(t, te, "cam", tc.name, lavfiWant, allOutputs...)
		})
	}
}

// TestAcceptanceEngineToEngine has engine B pull a stream that ffmpeg
// publishes into engine A, over RTSP with UDP transport, and reads every
// output of engine B.
func TestAcceptanceEngineToEngine(t *testing.T) {
	t.Parallel()
	a := startEngine(t, noDemo)
	b := startEngine(t, noDemo)
	ffmpegPublish(t, "h264", "tcp", a.rtspURL("origin/cam"), 60)
	waitStreamReady(t, a, "origin", "cam", 20*time.Second)
	s := addProxy(t, b, engineapi.AddProxyRequest{ID: "from-a", URL: a.rtspURL("origin/cam"), App: "edge", Stream: "cam", Transport: "udp"})
	if trackCodecs(s) != "video:H264,audio:AAC" {
		t.Fatalf("tracks %s", trackCodecs(s))
	}
	probeOutputs(t, b, "edge", "cam", lavfiWant, allOutputs...)
	var players engineapi.PlayerList
	a.control(t, "GET", engineapi.PathPlayers+"?protocol=rtsp", nil, &players)
	if len(players.Players) != 1 || players.Players[0].Frames == 0 {
		t.Fatalf("engine A's RTSP players: %+v", players.Players)
	}
}

// TestAcceptanceAudioCodecsFromGStreamer pulls GStreamer's G.711 A-law
// mount and its AAC sent as MP4A-LATM (rtpmp4apay, as many cameras send
// AAC), and reads the outputs that carry each.
func TestAcceptanceAudioCodecsFromGStreamer(t *testing.T) {
	t.Parallel()
	g := peers.StartGStreamer(t)
	pcma := lavfiWant
	// G.711 frames are as long as the sender's packets, which GStreamer
	// sizes by its buffers: the audio count is not checked. MPEG-TS has no
	// G.711, so HLS is fMP4 (the default).
	pcma.AudioCodec, pcma.SampleRate, pcma.AudioFrameSamples = "pcm_alaw", 8000, 0
	for _, tc := range []struct {
		mount, tracks string
		want          mediaprobe.Want
	}{
		{"pcma", "video:H264,audio:PCMA", pcma},
		{"latm", "video:H264,audio:AAC", lavfiWant},
	} {
		t.Run(tc.mount, func(t *testing.T) {
			t.Parallel()
			te := startEngine(t, noDemo)
			s := addProxy(t, te, engineapi.AddProxyRequest{ID: tc.mount, URL: g.URL("", tc.mount), App: "cam", Stream: tc.mount, Transport: "tcp"})
			if trackCodecs(s) != tc.tracks {
				t.Fatalf("tracks %s, want %s", trackCodecs(s), tc.tracks)
			}
			probeOutputs(t, te, "cam", tc.mount, tc.want, allOutputs...)
		})
	}
}
