package rtspserver_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtsp"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtspclient"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtspserver"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtsptest"
	"github.com/svcplatform/svc/test/testkit"
)

// A handler's refusal reaches the client with its status, and the
// request carries the path, query, client address and user.
func TestServerHandlerRefusals(t *testing.T) {
	r := rtsptest.NewRelay()
	r.Refuse = func(p media.Path, q map[string][]string) error {
		if len(q["svc_ticket"]) == 0 || q["svc_ticket"][0] != "good" {
			return rtsp.ErrForbidden
		}
		return nil
	}
	srv := startServer(t, rtspserver.Config{}, r)
	for _, tt := range []struct {
		query string
		want  error
	}{{"", rtsp.ErrForbidden}, {"?svc_ticket=bad", rtsp.ErrForbidden}, {"?svc_ticket=good&vhost=v1", rtsp.ErrNotFound}} {
		c, err := rtspclient.Dial(context.Background(), rtspURL(srv.Addr(), "app/cam/1"+tt.query), rtspclient.Config{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Describe(context.Background())
		c.Close()
		if !errors.Is(err, tt.want) {
			t.Errorf("%q: %v, want %v", tt.query, err, tt.want)
		}
	}
	plays := r.Plays()
	last := plays[len(plays)-1]
	if last.Path != (media.Path{Vhost: "v1", App: "app", Stream: "cam/1"}) || last.Query.Get("svc_ticket") != "good" || last.ClientAddr == nil {
		t.Fatalf("play request %+v", last)
	}
}

// A player can be kicked from outside, and a silent publisher times out.
func TestServerKickAndTimeout(t *testing.T) {
	t.Parallel() // real-time media: mostly waiting
	g := startGStreamer(t)
	r := rtsptest.NewRelay()
	srv := startServer(t, rtspserver.Config{SessionTimeout: 2 * time.Second}, r)

	// The relay's stream is fed by a Puller from GStreamer; the server
	// serves it to our own client.
	path := media.Path{Vhost: media.DefaultVhost, App: "live", Stream: "cam"}
	pullInto(t, r, path, g.url("", "h264"), rtspclient.TransportTCP)
	testkit.Eventually(t, 10*time.Second, "frames from GStreamer", func() bool { s := r.Stream(path); return s != nil && s.Keyframes.Load() > 0 })

	// Our own client plays from the server.
	var frames int
	var mu = make(chan struct{}, 1)
	mu <- struct{}{}
	c, err := rtspclient.Dial(context.Background(), rtspURL(srv.Addr(), "live/cam"), rtspclient.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Describe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Setup(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if err := c.Play(context.Background(), func(*media.Frame) { <-mu; frames++; mu <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(context.Background()) }()
	testkit.Eventually(t, 5*time.Second, "frames at the player", func() bool { <-mu; n := frames; mu <- struct{}{}; return n > 10 })
	sessions := srv.Sessions()
	if len(sessions) != 1 || sessions[0].Publishing || sessions[0].Transport != "udp" || sessions[0].Bytes == 0 {
		t.Fatalf("sessions %+v", sessions)
	}
	// The UDP player keeps its session past the timeout: RTCP receiver
	// reports and keepalives count as life.
	time.Sleep(3 * time.Second)
	if len(srv.Sessions()) != 1 {
		t.Fatal("a live UDP session timed out")
	}
	if !srv.Kick(sessions[0].ID) {
		t.Fatal("kick found no session")
	}
	select {
	case err := <-runErr:
		if err == nil {
			t.Fatal("Run ended without error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the kicked player kept running")
	}
	testkit.Eventually(t, 2*time.Second, "the session to go", func() bool { return len(srv.Sessions()) == 0 })
	if srv.Kick(sessions[0].ID) {
		t.Fatal("kicked twice")
	}

	// A client that sets up and then says nothing is timed out.
	idle, err := rtspclient.Dial(context.Background(), rtspURL(srv.Addr(), "live/cam"), rtspclient.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	idle.Describe(context.Background())
	if err := idle.Setup(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, time.Second, "the idle session", func() bool { return len(srv.Sessions()) == 1 })
	testkit.Eventually(t, 5*time.Second, "the idle session to time out", func() bool { return len(srv.Sessions()) == 0 })
}

// rawSession drives the server with hand-written requests, for what our
// Client does not do (PAUSE).
type rawSession struct {
	t       *testing.T
	r       *rtsp.MessageReader
	w       *bufio.Writer
	cseq    int
	session string
}

func (s *rawSession) do(method, url string, h ...rtsp.HeaderField) *rtsp.Response {
	s.t.Helper()
	s.cseq++
	req := &rtsp.Request{Method: method, URL: url, Header: append(rtsp.Header{{Name: "CSeq", Value: strconv.Itoa(s.cseq)}}, h...)}
	if s.session != "" {
		req.Header.Add("Session", s.session)
	}
	req.Write(s.w)
	s.w.Flush()
	var m rtsp.Message
	for {
		if err := s.r.Read(&m); err != nil {
			s.t.Fatalf("%s: %v", method, err)
		}
		if m.Response != nil {
			break
		}
	}
	if sid := m.Response.Header.Get("Session"); sid != "" {
		s.session, _, _ = strings.Cut(sid, ";")
	}
	return m.Response
}

// nextRTP reads until an RTP packet on channel 0 and returns its sequence
// number and timestamp.
func (s *rawSession) nextRTP() (uint16, uint32) {
	var m rtsp.Message
	for {
		if err := s.r.Read(&m); err != nil {
			s.t.Fatal(err)
		}
		if m.Channel == 0 && len(m.Payload) >= 12 {
			return binary.BigEndian.Uint16(m.Payload[2:]), binary.BigEndian.Uint32(m.Payload[4:])
		}
	}
}

// PAUSE stops the packets; PLAY resumes them with sequence numbers and
// RTP time going on from where they were.
func TestServerPauseAndResume(t *testing.T) {
	t.Parallel() // real-time media: mostly waiting
	g := startGStreamer(t)
	r := rtsptest.NewRelay()
	srv := startServer(t, rtspserver.Config{}, r)
	path := media.Path{Vhost: media.DefaultVhost, App: "live", Stream: "cam"}
	pullInto(t, r, path, g.url("", "h264"), rtspclient.TransportTCP)
	testkit.Eventually(t, 10*time.Second, "the stream", func() bool { s := r.Stream(path); return s != nil && s.Keyframes.Load() > 0 })

	conn, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	s := &rawSession{t: t, r: rtsp.NewMessageReader(conn), w: bufio.NewWriter(conn)}
	url := rtspURL(srv.Addr(), "live/cam")
	if resp := s.do(rtsp.MethodDescribe, url); resp.StatusCode != 200 || resp.Header.Get("Content-Base") != url+"/" {
		t.Fatalf("DESCRIBE: %+v", resp)
	}
	if resp := s.do(rtsp.MethodSetup, url+"/trackID=0", rtsp.HeaderField{Name: "Transport", Value: "RTP/AVP/TCP;unicast;interleaved=0-1"}); resp.StatusCode != 200 {
		t.Fatalf("SETUP: %+v", resp)
	}
	resp := s.do(rtsp.MethodPlay, url)
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("RTP-Info"), "url="+url+"/trackID=0;seq=") {
		t.Fatalf("PLAY: %+v", resp)
	}
	var seq uint16
	var ts uint32
	for i := 0; i < 50; i++ {
		seq, ts = s.nextRTP()
	}
	if resp := s.do(rtsp.MethodPause, url); resp.StatusCode != 200 {
		t.Fatalf("PAUSE: %+v", resp)
	}
	time.Sleep(500 * time.Millisecond)
	if resp := s.do(rtsp.MethodPlay, url); resp.StatusCode != 200 {
		t.Fatalf("PLAY again: %+v", resp)
	}
	seq2, ts2 := s.nextRTP()
	if seq2 <= seq || int32(ts2-ts) <= 0 {
		t.Fatalf("after resuming: seq %d ts %d, before seq %d ts %d", seq2, ts2, seq, ts)
	}
	if resp := s.do(rtsp.MethodTeardown, url); resp.StatusCode != 200 {
		t.Fatalf("TEARDOWN: %+v", resp)
	}
	testkit.Eventually(t, 2*time.Second, "the session to go", func() bool {
		for _, si := range srv.Sessions() {
			if !si.Publishing {
				return false
			}
		}
		return true
	})
}
