package rtspclient

import (
	"errors"
	"testing"

	"github.com/svcplatform/svc/mediaengine/rtsp"
)

func TestClientAuthChoosesStrongest(t *testing.T) {
	tests := []struct {
		name       string
		challenges []string
		want       string // "basic", or the digest algorithm
		err        error
		allowBasic bool
	}{
		{
			"SHA-256 over MD5 whatever the order",
			[]string{`Digest realm="r", nonce="n", algorithm=MD5`, `Digest realm="r", nonce="n", algorithm=SHA-256, qop="auth"`},
			"SHA-256",
			nil,
			false,
		},
		{"Digest over Basic", []string{`Basic realm="r"`, `Digest realm="r", nonce="n"`}, "", nil, true},
		{"Basic alone, opted in", []string{`Basic realm="cam"`}, "basic", nil, true},
		{"Basic alone is refused over plain rtsp", []string{`Basic realm="cam"`}, "", rtsp.ErrBasicRefused, false},
		{"unknown algorithm skipped", []string{`Digest realm="r", nonce="n", algorithm=MD5-sess`, `Digest realm="r", nonce="n", algorithm=MD5`}, "MD5", nil, false},
		{"nothing usable", []string{`Bearer x`, `Digest realm="r", nonce="n", qop="auth-conf"`}, "", rtsp.ErrUnauthorized, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := clientAuth{user: "u", password: "p", allowBasic: tt.allowBasic}
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

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"rtsp://u:secret@cam/live?token=abc":       "rtsp://***@cam/live?redacted",
		"rtsp://cam/user=u&password=secret&chan=1": "rtsp://cam/user=***&password=***&chan=1",
		"rtsp://cam/live":                          "rtsp://cam/live",
		"::bad":                                    "(unparsable URL)",
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}
