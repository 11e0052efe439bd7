package adversarial

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/test/testkit"
)

// halfSent starts a request whose body never finishes.
const halfSent = "POST %s HTTP/1.1\r\nHost: svc\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{\"username\":"

// closedWithin reads c until the server closes it and fails unless that
// happens within limit.
func closedWithin(t *testing.T, what string, c net.Conn, limit time.Duration) {
	t.Helper()
	start := time.Now()
	c.SetReadDeadline(start.Add(limit + 5*time.Second))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: still open after %s", what, time.Since(start))
	}
	if took := time.Since(start); took > limit {
		t.Fatalf("%s: closed only after %s", what, took)
	}
}

// Item 9: connections that send half a request body are closed once the
// body deadline passes, on the API and on the agent port; one client
// address holds a bounded number of connections; WebSockets are not cut.
// Before, 300 half-sent requests were held for ever.
func TestAttack09SlowClients(t *testing.T) {
	n := startNode(t, "a9", "", "", func(c *config.Config) { c.RequestBodyTimeout = time.Second; c.MaxConnectionsPerClient = 40 })
	tok := n.token("system.view")

	t.Run("half-sent bodies are closed", func(t *testing.T) {
		var conns []net.Conn
		for range 30 {
			c, err := net.Dial("tcp", n.s.HTTPAddr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := io.WriteString(c, strings.Replace(halfSent, "%s", "/api/v2/auth/login", 1)); err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		for range 5 {
			c, err := tls.Dial("tcp", n.s.AgentAddr(), &tls.Config{InsecureSkipVerify: true})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := io.WriteString(c, strings.Replace(halfSent, "%s", "/agent/v1/enroll", 1)); err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		for i, c := range conns {
			closedWithin(t, "half-sent request "+string(rune('A'+i)), c, 4*time.Second)
		}
	})

	t.Run("connections per client address", func(t *testing.T) {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for range 40 {
			c, err := net.Dial("tcp", n.s.HTTPAddr)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
		}
		// Give the server the moment to accept them all.
		time.Sleep(200 * time.Millisecond)
		extra, err := net.Dial("tcp", n.s.HTTPAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer extra.Close()
		io.WriteString(extra, "GET /health HTTP/1.1\r\nHost: svc\r\n\r\n")
		closedWithin(t, "the connection beyond the cap", extra, time.Second)
		// Another address is served meanwhile.
		other := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext}}
		resp, err := other.Get(n.api + "/health")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("another client during the cap: %v %v", resp, err)
		}
		resp.Body.Close()
		// Closing the held connections frees the address again.
		for _, c := range held {
			c.Close()
		}
		held = nil
		testkit.Eventually(t, 5*time.Second, "the address served again", func() bool {
			resp, err := (&http.Client{Timeout: time.Second}).Get(n.api + "/health")
			if err == nil {
				resp.Body.Close()
			}
			return err == nil && resp.StatusCode == 200
		})
	})

	t.Run("a WebSocket outlives the body deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		u := "ws" + strings.TrimPrefix(n.api, "http") + "/api/v2/events/runtime/ws"
		ws, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}, Subprotocols: []string{events.RuntimeProtocol}})
		if err != nil {
			t.Fatal(err)
		}
		defer ws.CloseNow()
		if _, _, err := ws.Read(ctx); err != nil {
			t.Fatalf("hello frame: %v", err)
		}
		quiet, stop := context.WithTimeout(ctx, 3*time.Second)
		defer stop()
		if _, _, err := ws.Read(quiet); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("the WebSocket ended after the body deadline: %v", err)
		}
	})
}
