package rtspserver_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtsp"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtspclient"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtspserver"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtsptest"
	"github.com/svcplatform/svc/shared/digestauth"
	"github.com/svcplatform/svc/test/testkit"
)

func credentials(users map[string]string) func(string) (string, bool) {
	return func(u string) (string, bool) { p, ok := users[u]; return p, ok }
}

// The server's Digest check: our client (SHA-256 when offered, MD5
// otherwise) and ffmpeg (MD5) get in with the right password and get 401
// with a wrong one.
func TestServerDigestAuth(t *testing.T) {
	t.Parallel() // real-time media: mostly waiting
	r := rtsptest.NewRelay()
	tests := []struct {
		name     string
		algs     []string
		userinfo string
		wantErr  error
	}{
		{"SHA-256 and MD5 offered", []string{"MD5", "SHA-256"}, "alice:pw-1", nil},
		{"SHA-256 only", []string{"SHA-256"}, "alice:pw-1", nil},
		{"MD5 only", []string{"MD5"}, "alice:pw-1", nil},
		{"wrong password", []string{"MD5"}, "alice:nope", rtsp.ErrUnauthorized},
		{"unknown user", []string{"SHA-256"}, "mallory:pw-1", rtsp.ErrUnauthorized},
		{"no credentials", []string{"MD5"}, "", rtsp.ErrUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startServer(t, rtspserver.Config{Credentials: credentials(map[string]string{"alice": "pw-1"}), DigestAlgorithms: tt.algs}, r)
			url := "rtsp://" + tt.userinfo + "@" + srv.Addr().String() + "/live/none"
			if tt.userinfo == "" {
				url = rtspURL(srv.Addr(), "live/none")
			}
			c, err := rtspclient.Dial(context.Background(), url, rtspclient.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.Describe(context.Background())
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("got %v, want %v", err, tt.wantErr)
				}
				return
			}
			// Authenticated, the request reaches the handler: no such stream.
			if !errors.Is(err, rtsp.ErrNotFound) {
				t.Fatalf("got %v, want 404 from the handler", err)
			}
		})
	}
	t.Run("ffmpeg publishes with credentials", func(t *testing.T) {
		srv := startServer(t, rtspserver.Config{Credentials: credentials(map[string]string{"cam": "p@ss word"})}, r)
		url := "rtsp://cam:p%40ss%20word@" + srv.Addr().String() + "/live/auth"
		startProcess(t, "ffmpeg", publishArgs("h264", "tcp", url, 8)...)
		path := media.Path{Vhost: media.DefaultVhost, App: "live", Stream: "auth"}
		testkit.Eventually(t, 10*time.Second, "the authenticated publisher", func() bool { s := r.Stream(path); return s != nil && s.Frames.Load() > 0 })
		publishes := r.Publishes()
		user := publishes[len(publishes)-1].User
		if user != "cam" {
			t.Fatalf("handler saw user %q", user)
		}
		out := filepath.Join(t.TempDir(), "bad.mp4")
		log := runPeerExpectFailure(t, 20*time.Second, "ffmpeg", readArgs("tcp", "rtsp://cam:wrong@"+srv.Addr().String()+"/live/auth", out, 2)...)
		if !containsAny(log, "401", "Unauthorized") {
			t.Fatalf("ffmpeg with a wrong password: %s", log)
		}
	})
}

// The server also accepts a Digest answer without qop (clients that
// ignore the qop it offers, such as live555-based players).
func TestServerDigestWithoutQOP(t *testing.T) {
	srv := startServer(t, rtspserver.Config{Credentials: credentials(map[string]string{"u": "pw"})}, rtsptest.NewRelay())
	conn, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r, w := rtsp.NewMessageReader(conn), bufio.NewWriter(conn)
	url := rtspURL(srv.Addr(), "live/x")
	send := func(h rtsp.Header) *rtsp.Response {
		(&rtsp.Request{Method: rtsp.MethodDescribe, URL: url, Header: h}).Write(w)
		w.Flush()
		var m rtsp.Message
		if err := r.Read(&m); err != nil || m.Response == nil {
			t.Fatalf("%v %+v", err, m)
		}
		return m.Response
	}
	resp := send(rtsp.Header{{Name: "CSeq", Value: "1"}})
	chal := resp.Header.Get("WWW-Authenticate")
	if resp.StatusCode != 401 || !strings.Contains(chal, `qop="auth"`) {
		t.Fatalf("%d %q", resp.StatusCode, chal)
	}
	nonce := chal[strings.Index(chal, `nonce="`)+7:]
	nonce = nonce[:strings.IndexByte(nonce, '"')]
	h, err := digestauth.Build("MD5", "", "svc", nonce, rtsp.MethodDescribe, url, "u", "pw")
	if err != nil {
		t.Fatal(err)
	}
	if resp := send(rtsp.Header{{Name: "CSeq", Value: "2"}, {Name: "Authorization", Value: h}}); resp.StatusCode != rtsp.StatusNotFound {
		t.Fatalf("authenticated DESCRIBE answered %d", resp.StatusCode)
	}
}

// With TicketParam a player that carries a ticket and no credentials gets
// through to the handler (which decides by the ticket), over ffmpeg's
// whole DESCRIBE/SETUP/PLAY; without the ticket it is challenged, and a
// publisher with a ticket but no credentials is refused.
func TestServerTicketPlayersSkipDigest(t *testing.T) {
	t.Parallel() // real-time media: mostly waiting
	r := rtsptest.NewRelay()
	srv := startServer(t, rtspserver.Config{Credentials: credentials(map[string]string{"cam": "pw-cam"}), TicketParam: "svc_ticket"}, r)
	startProcess(t, "ffmpeg", publishArgs("h264", "tcp", "rtsp://cam:pw-cam@"+srv.Addr().String()+"/live/tk", 12)...)
	path := media.Path{Vhost: media.DefaultVhost, App: "live", Stream: "tk"}
	testkit.Eventually(t, 10*time.Second, "the publisher", func() bool { s := r.Stream(path); return s != nil && s.Frames.Load() > 0 })

	out := filepath.Join(t.TempDir(), "ticket.mp4")
	runPeer(t, 30*time.Second, "ffmpeg", readArgs("tcp", rtspURL(srv.Addr(), "live/tk")+"?svc_ticket=T1", out, 2)...)
	plays := r.Plays()
	if len(plays) == 0 || plays[len(plays)-1].Query.Get("svc_ticket") != "T1" || plays[len(plays)-1].User != "" {
		t.Fatalf("the handler did not see the ticket player: %+v", plays)
	}
	if v := probe(t, out)["video"]; v == nil || v.CodecName != "h264" || v.Packets < 25 {
		t.Fatalf("the ticket player read %+v", v)
	}
	log := runPeerExpectFailure(t, 20*time.Second, "ffmpeg", readArgs("tcp", rtspURL(srv.Addr(), "live/tk"), filepath.Join(t.TempDir(), "none.mp4"), 1)...)
	if !containsAny(log, "401", "Unauthorized") {
		t.Fatalf("a player without ticket or credentials: %s", log)
	}
	log = runPeerExpectFailure(t, 20*time.Second, "ffmpeg", publishArgs("h264", "tcp", rtspURL(srv.Addr(), "live/other")+"?svc_ticket=T1", 2)...)
	if !containsAny(log, "401", "Unauthorized") {
		t.Fatalf("a publisher with a ticket and no credentials: %s", log)
	}
}
