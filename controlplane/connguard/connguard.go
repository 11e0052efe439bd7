// Package connguard bounds what one client can hold of a control node's
// HTTP servers (the API and the agent port): how many connections it may
// keep open at once, and how long it may take to send a request body. Both
// exist because a client that opens connections and then sends nothing, or
// a body a byte at a time, costs it almost nothing and the server a file
// descriptor, a goroutine and buffers each; about 20,000 of them exhaust
// the descriptors. WebSockets and long polls are not affected: they have
// no body still arriving while they wait.
package connguard

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svcplatform/svc/controlplane/ratelimit"
)

// Listener accepts at most Max connections at once per client (its
// address, an IPv6 client by its /64); a connection beyond that is closed
// as soon as it is accepted, without a byte read. Exempt addresses
// (trusted reverse proxies, which carry everyone's connections) are not
// counted.
type Listener struct {
	net.Listener
	Max    int
	Exempt func(ip net.IP) bool
	// Refused counts connections closed at accept.
	Refused atomic.Int64

	mu   sync.Mutex
	open map[string]int
}

// Limit wraps ln; limit <= 0 leaves connections unbounded.
func Limit(ln net.Listener, limit int, exempt func(ip net.IP) bool) *Listener {
	return &Listener{Listener: ln, Max: limit, Exempt: exempt, open: map[string]int{}}
}

// Accept implements net.Listener.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil || l.Max <= 0 {
			return c, err
		}
		host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		ip := net.ParseIP(host)
		if ip == nil || (l.Exempt != nil && l.Exempt(ip)) {
			return c, nil
		}
		key := ratelimit.ClientKey(host)
		l.mu.Lock()
		if l.open[key] >= l.Max {
			l.mu.Unlock()
			l.Refused.Add(1)
			c.Close()
			continue
		}
		l.open[key]++
		l.mu.Unlock()
		return &conn{Conn: c, release: func() { l.release(key) }}, nil
	}
}

func (l *Listener) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[key]--; l.open[key] <= 0 {
		delete(l.open, key)
	}
}

// Open is how many connections a client holds now.
func (l *Listener) Open(ip string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[ratelimit.ClientKey(ip)]
}

type conn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// BodyDeadline gives every request with a body d to send all of it; a
// client still sending when the time is up has its connection closed. The
// deadline is lifted as soon as the body has been read to its end, so a
// handler that then waits (a long poll) is not cut short, and requests
// without a body (WebSocket upgrades, reads) are not touched: their
// headers are bounded by the server's ReadHeaderTimeout.
func BodyDeadline(h http.Handler, d time.Duration) http.Handler {
	if d <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if err := rc.SetReadDeadline(time.Now().Add(d)); err != nil {
			h.ServeHTTP(w, r)
			return
		}
		r.Body = &deadlineBody{ReadCloser: r.Body, lift: func() { rc.SetReadDeadline(time.Time{}) }, header: w.Header()}
		h.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the read deadline once the body ends. When the
// deadline cut the body short, the answer (whatever the handler makes of
// the error) closes the connection: otherwise the server would keep it
// waiting for a next request until its idle timeout.
type deadlineBody struct {
	io.ReadCloser
	once   sync.Once
	lift   func()
	header http.Header
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF):
		b.once.Do(b.lift)
	case errors.As(err, &ne) && ne.Timeout():
		b.header.Set("Connection", "close")
	}
	return n, err
}
