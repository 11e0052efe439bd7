package rtc

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/internal/mediatest"
	"github.com/svcplatform/svc/mediaengine/media"
)

// fakeHost admits every player of the test hub's streams.
type fakeHost struct {
	hub     *hub.Hub
	publish func(path media.Path, tracks []*media.Track) (*hub.Publisher, error)
}

func (h fakeHost) Play(ctx context.Context, path media.Path, format hub.Format, _, _ string, _ map[string]string) (*hub.Reader, func(int), func(),
	error) {
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rd, err := h.hub.Subscribe(wctx, path, format, "test")
	if errors.Is(err, hub.ErrStreamNotFound) {
		return nil, nil, nil, ErrStreamNotFound
	}
	if err != nil {
		return nil, nil, nil, err
	}
	return rd, func(int) {}, rd.Close, nil
}

func (h fakeHost) Publish(_ context.Context, path media.Path, _ hub.Origin, _ map[string]string, tracks []*media.Track) (*hub.Publisher, func(int),
	func(), error) {
	pub, err := h.publish(path, tracks)
	return pub, func(int) {}, func() {}, err
}

type testServer struct {
	*Server
	hub  *hub.Hub
	http *httptest.Server
	// publish, when set, decides the publishers fakeHost admits.
	publish func(path media.Path, tracks []*media.Track) (*hub.Publisher, error)
}

// startServer runs the WebRTC server on loopback with its routes on a test
// HTTP server, and publishes live/cam (H.264 + AAC) with a keyframe every
// 40 ms until the test ends.
func startServer(t *testing.T) *testServer {
	t.Helper()
	// pion reports a closed connection's state at debug from its own
	// goroutines, possibly after the test ended.
	log := zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))
	h := hub.New(hub.Config{}, log)
	t.Cleanup(h.Close)
	ts := &testServer{hub: h}
	host := fakeHost{hub: h}
	host.publish = func(path media.Path, tracks []*media.Track) (*hub.Publisher, error) {
		if ts.publish != nil {
			return ts.publish(path, tracks)
		}
		return h.Publish(path, hub.Origin{Kind: "whip"}, tracks)
	}
	srv, err := New(Config{UDPAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0"}, host, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	mux := http.NewServeMux()
	srv.Routes(mux)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	tracks := mediatest.Tracks()
	pub, err := h.Publish(media.Path{App: "live", Stream: "cam"}, hub.Origin{Kind: "test"}, tracks)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		idr := []byte{0x65, 0x88, 0x84, 0x00, 0x33, 0xff}
		for i := 0; ctx.Err() == nil; i++ {
			pts := time.Duration(i) * 40 * time.Millisecond
			pub.WriteFrame(&media.Frame{Track: tracks[0], PTS: pts, DTS: pts, Keyframe: true, NALUs: [][]byte{idr}})
			pub.WriteFrame(&media.Frame{Track: tracks[1], PTS: pts, DTS: pts, Payload: []byte{0x21, 0x10, 0x04}})
			time.Sleep(40 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { cancel(); <-done; pub.Close() })
	ts.Server, ts.http = srv, hs
	return ts
}

// post sends an SDP body and returns the response and its body.
func (ts *testServer) post(t *testing.T, path, contentType, body string) (*http.Response, string) {
	t.Helper()
	return ts.do(t, http.MethodPost, path, contentType, body)
}

func (ts *testServer) do(t *testing.T, method, path, contentType, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, ts.http.URL+path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// clientOffer makes a pion peer that receives the kinds given with the
// codecs register adds, and returns it with its complete offer.
func clientOffer(t *testing.T, register func(*webrtc.MediaEngine) error, kinds ...webrtc.RTPCodecType) (*webrtc.PeerConnection, string) {
	t.Helper()
	me := &webrtc.MediaEngine{}
	if err := register(me); err != nil {
		t.Fatal(err)
	}
	var se webrtc.SettingEngine
	se.SetIncludeLoopbackCandidate(true)
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	se.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	pc, err := webrtc.NewAPI(webrtc.WithMediaEngine(me), webrtc.WithSettingEngine(se)).NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	for _, k := range kinds {
		if _, err := pc.AddTransceiverFromKind(k, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionRecvonly}); err != nil {
			t.Fatal(err)
		}
	}
	return pc, gatheredOffer(t, pc)
}

// gatheredOffer sets pc's offer as its local description and returns it
// once ICE gathering is complete (no trickle: the offer holds the
// candidates).
func gatheredOffer(t *testing.T, pc *webrtc.PeerConnection) string {
	t.Helper()
	offer, err := pc.CreateOffer(nil)
	if err != nil {
		t.Fatal(err)
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(offer); err != nil {
		t.Fatal(err)
	}
	<-gathered
	return pc.LocalDescription().SDP
}

func defaultCodecs(m *webrtc.MediaEngine) error { return m.RegisterDefaultCodecs() }

// TestWHEPSendsTheStream: a pion viewer offering the browsers' default
// codecs gets the H.264 track (AAC is left out, and the answer's note says
// why), receives its packets, and DELETE on the Location ends the session.
func TestWHEPSendsTheStream(t *testing.T) {
	ts := startServer(t)
	pc, offer := clientOffer(t, defaultCodecs, webrtc.RTPCodecTypeVideo, webrtc.RTPCodecTypeAudio)
	got := make(chan string, 4)
	pc.OnTrack(func(tr *webrtc.TrackRemote, _ *webrtc.RTPReceiver) {
		for {
			p, _, err := tr.ReadRTP()
			if err != nil {
				return
			}
			if len(p.Payload) > 0 {
				select {
				case got <- tr.Codec().MimeType:
				default:
				}
			}
		}
	})
	resp, body := ts.post(t, "/live/cam/whep", "application/sdp", offer)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST offer: %d %s", resp.StatusCode, body)
	}
	loc := resp.Header.Get("Location")
	if !strings.HasPrefix(loc, "/live/cam/whep/") || resp.Header.Get("Content-Type") != "application/sdp" {
		t.Fatalf("Location %q, Content-Type %q", loc, resp.Header.Get("Content-Type"))
	}
	if note := resp.Header.Get("X-Svc-Note"); !strings.Contains(note, "AAC") {
		t.Fatalf("X-Svc-Note %q, want the AAC track's note", note)
	}
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: body}); err != nil {
		t.Fatal(err)
	}
	select {
	case mime := <-got:
		if mime != webrtc.MimeTypeH264 {
			t.Fatalf("received %s, want H264", mime)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no RTP packet within 20 s")
	}
	if ts.Sessions() != 1 {
		t.Fatalf("%d sessions, want 1", ts.Sessions())
	}
	if resp, body := ts.do(t, http.MethodDelete, loc, "", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %d %s", resp.StatusCode, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ts.Sessions() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the session was not released")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if resp, _ := ts.do(t, http.MethodDelete, loc, "", ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("second DELETE: %d, want 404", resp.StatusCode)
	}
}

// stripLines removes the lines starting with any prefix.
func stripLines(sdpText string, prefixes ...string) string {
	var out []string
	for _, l := range strings.Split(sdpText, "\r\n") {
		drop := false
		for _, p := range prefixes {
			drop = drop || strings.HasPrefix(l, p)
		}
		if !drop {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\r\n")
}

// TestWHEPRefusesBadOffers: each refusal carries its code.
func TestWHEPRefusesBadOffers(t *testing.T) {
	ts := startServer(t)
	_, good := clientOffer(t, defaultCodecs, webrtc.RTPCodecTypeVideo, webrtc.RTPCodecTypeAudio)
	_, vp8Only := clientOffer(t, func(m *webrtc.MediaEngine) error {
		return m.RegisterCodec(webrtc.RTPCodecParameters{PayloadType: 96,
			RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: 90000}}, webrtc.RTPCodecTypeVideo)
	}, webrtc.RTPCodecTypeVideo)
	tests := []struct {
		name, path, contentType, body string
		status                        int
		code                          string
	}{
		{"wrong content type", "/live/cam/whep", "text/plain", good, 415, "unsupported_media_type"},
		{"not SDP", "/live/cam/whep", "application/sdp", "hello", 400, "invalid_sdp"},
		{"no ICE credentials", "/live/cam/whep", "application/sdp", stripLines(good, "a=ice-ufrag", "a=ice-pwd"), 400, "invalid_sdp"},
		{"no fingerprint", "/live/cam/whep", "application/sdp", stripLines(good, "a=fingerprint"), 400, "invalid_sdp"},
		{"only unsupported codecs", "/live/cam/whep", "application/sdp", vp8Only, 400, "no_common_codec"},
		{"sends instead of receiving", "/live/cam/whep", "application/sdp", strings.ReplaceAll(good, "a=recvonly", "a=sendonly"), 400, "invalid_sdp"},
		{"unknown stream", "/live/nothing/whep", "application/sdp", good, 404, "stream_not_found"},
		{"bad stream name", "/live/a%20b/whep", "application/sdp", good, 400, "invalid_path"},
		{"too large", "/live/cam/whep", "application/sdp", good + strings.Repeat("a=x\r\n", 20000), 413, "body_too_large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := ts.post(t, tt.path, tt.contentType, tt.body)
			if resp.StatusCode != tt.status || !strings.Contains(body, `"code":"`+tt.code+`"`) {
				t.Fatalf("got %d %s, want %d %s", resp.StatusCode, body, tt.status, tt.code)
			}
		})
	}
	if n := ts.Sessions(); n != 0 {
		t.Fatalf("%d sessions left by refused offers", n)
	}
}

// TestWHEPTrickle: PATCH adds candidates to a session; another ICE ufrag
// (a restart), a body that is not a fragment and an unknown session are
// refused.
func TestWHEPTrickle(t *testing.T) {
	ts := startServer(t)
	pc, offer := clientOffer(t, defaultCodecs, webrtc.RTPCodecTypeVideo)
	resp, body := ts.post(t, "/live/cam/whep", "application/sdp", offer)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST: %d %s", resp.StatusCode, body)
	}
	loc := resp.Header.Get("Location")
	ufrag := ""
	for _, l := range strings.Split(pc.LocalDescription().SDP, "\r\n") {
		if strings.HasPrefix(l, "a=ice-ufrag:") {
			ufrag = strings.TrimPrefix(l, "a=ice-ufrag:")
		}
	}
	frag := "a=ice-ufrag:" + ufrag + "\r\na=ice-pwd:x\r\nm=video 9 UDP/TLS/RTP/SAVPF 0\r\na=mid:0\r\n" +
		"a=candidate:1 1 udp 2130706431 127.0.0.1 40000 typ host\r\na=end-of-candidates\r\n"
	const ct = "application/trickle-ice-sdpfrag"
	tests := []struct {
		name, path, contentType, body string
		status                        int
	}{
		{"candidates", loc, ct, frag, http.StatusNoContent},
		{"ICE restart", loc, ct, strings.Replace(frag, ufrag, "other", 1), http.StatusUnprocessableEntity},
		{"not a fragment", loc, ct, "garbage", http.StatusBadRequest},
		{"short candidate", loc, ct, "a=candidate:1 1 udp\r\n", http.StatusBadRequest},
		{"wrong content type", loc, "application/sdp", frag, http.StatusUnsupportedMediaType},
		{"unknown session", "/live/cam/whep/0123", ct, frag, http.StatusNotFound},
		{"another stream's session", strings.Replace(loc, "/cam/", "/other/", 1), ct, frag, http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if resp, body := ts.do(t, http.MethodPatch, tt.path, tt.contentType, tt.body); resp.StatusCode != tt.status {
				t.Fatalf("PATCH: %d %s, want %d", resp.StatusCode, body, tt.status)
			}
		})
	}
}
