package rtsp

import (
	"bufio"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/svcplatform/svc/shared/digestauth"
)

func TestClientAuthChoosesStrongest(t *testing.T) {
	tests := []struct {
		name       string
		challenges []string
		want       string // "basic", or the digest algorithm
		err        error
	}{
		{"SHA-256 over MD5 whatever the order", []string{`Digest realm="r", nonce="n", algorithm=MD5`, `Digest realm="r", nonce="n", algorithm=SHA-256, qop="auth"`}, "SHA-256", nil},
		{"Digest over Basic", []string{`Basic realm="r"`, `Digest realm="r", nonce="n"`}, "", nil},
		{"Basic alone", []string{`Basic realm="cam"`}, "basic", nil},
		{"unknown algorithm skipped", []string{`Digest realm="r", nonce="n", algorithm=MD5-sess`, `Digest realm="r", nonce="n", algorithm=MD5`}, "MD5", nil},
		{"nothing usable", []string{`Bearer x`, `Digest realm="r", nonce="n", qop="auth-conf"`}, "", ErrUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := clientAuth{user: "u", password: "p"}
			err := a.challenged(tt.challenges)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == "basic":
				if h, _ := a.header("DESCRIBE", "rtsp://x/"); h != "Basic dTpw" {
					t.Fatalf("header %q", h)
				}
			case a.challenge == nil || a.challenge.Algorithm != tt.want:
				t.Fatalf("chose %+v", a.challenge)
			}
		})
	}
}

// The server also accepts a Digest answer without qop (clients that
// ignore the qop it offers, such as live555-based players).
func TestServerDigestWithoutQOP(t *testing.T) {
	srv := startServer(t, ServerConfig{Credentials: credentials(map[string]string{"u": "pw"})}, newRelay())
	conn, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r, w := NewMessageReader(conn), bufio.NewWriter(conn)
	url := rtspURL(srv.Addr(), "live/x")
	send := func(h Header) *Response {
		(&Request{Method: MethodDescribe, URL: url, Header: h}).Write(w)
		w.Flush()
		var m Message
		if err := r.Read(&m); err != nil || m.Response == nil {
			t.Fatalf("%v %+v", err, m)
		}
		return m.Response
	}
	resp := send(Header{{"CSeq", "1"}})
	chal := resp.Header.Get("WWW-Authenticate")
	if resp.StatusCode != 401 || !strings.Contains(chal, `qop="auth"`) {
		t.Fatalf("%d %q", resp.StatusCode, chal)
	}
	nonce := chal[strings.Index(chal, `nonce="`)+7:]
	nonce = nonce[:strings.IndexByte(nonce, '"')]
	h, err := digestauth.Build("MD5", "", "svc", nonce, MethodDescribe, url, "u", "pw")
	if err != nil {
		t.Fatal(err)
	}
	if resp := send(Header{{"CSeq", "2"}, {"Authorization", h}}); resp.StatusCode != StatusNotFound {
		t.Fatalf("authenticated DESCRIBE answered %d", resp.StatusCode)
	}
}
