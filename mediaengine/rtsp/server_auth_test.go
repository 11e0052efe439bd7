package rtsp

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
)

func credentials(users map[string]string) func(string) (string, bool) {
	return func(u string) (string, bool) { p, ok := users[u]; return p, ok }
}

// The server's Digest check: our client (SHA-256 when offered, MD5
// otherwise) and ffmpeg (MD5) get in with the right password and get 401
// with a wrong one.
func TestServerDigestAuth(t *testing.T) {
	r := newRelay()
	tests := []struct {
		name     string
		algs     []string
		userinfo string
		wantErr  error
	}{
		{"SHA-256 preferred", []string{"MD5", "SHA-256"}, "alice:pw-1", nil},
		{"MD5", []string{"MD5"}, "alice:pw-1", nil},
		{"wrong password", []string{"MD5"}, "alice:nope", ErrUnauthorized},
		{"unknown user", []string{"SHA-256"}, "mallory:pw-1", ErrUnauthorized},
		{"no credentials", []string{"MD5"}, "", ErrUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startServer(t, ServerConfig{Credentials: credentials(map[string]string{"alice": "pw-1"}), DigestAlgorithms: tt.algs}, r)
			url := "rtsp://" + tt.userinfo + "@" + srv.Addr().String() + "/live/none"
			if tt.userinfo == "" {
				url = rtspURL(srv.Addr(), "live/none")
			}
			c, err := Dial(context.Background(), url, ClientConfig{})
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
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("got %v, want 404 from the handler", err)
			}
			if tt.algs[len(tt.algs)-1] == "SHA-256" && (c.auth.challenge == nil || c.auth.challenge.Algorithm != "SHA-256") {
				t.Fatalf("client did not choose SHA-256: %+v", c.auth.challenge)
			}
		})
	}
	t.Run("ffmpeg publishes with credentials", func(t *testing.T) {
		srv := startServer(t, ServerConfig{Credentials: credentials(map[string]string{"cam": "p@ss word"})}, r)
		url := "rtsp://cam:p%40ss%20word@" + srv.Addr().String() + "/live/auth"
		startProcess(t, "ffmpeg", publishArgs("h264", "tcp", url, 8)...)
		path := media.Path{Vhost: media.DefaultVhost, App: "live", Stream: "auth"}
		waitFor(t, 10*time.Second, "the authenticated publisher", func() bool { s := r.stream(path); return s != nil && s.frames.Load() > 0 })
		r.mu.Lock()
		user := r.publishes[len(r.publishes)-1].User
		r.mu.Unlock()
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
