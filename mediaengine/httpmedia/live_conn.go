package httpmedia

import (
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/player"
)

var crlf = []byte("\r\n")

// sendBuffer caps the kernel's send buffer of a player connection. Without
// a cap, loopback and LAN autotuning let megabytes pile up unseen in the
// kernel before the hub notices a slow player; with it, a stalled player
// is visible (and loses frames) within about a second of a 2 Mbps stream.
const sendBuffer = 256 << 10

// liveConn is one long-lived HTTP-FLV or HTTP-fMP4 response on a hijacked
// connection, written by its write shard.
type liveConn struct {
	srv     *Server
	shard   *writeShard
	conn    net.Conn
	raw     syscall.RawConn
	rd      *hub.Reader
	p       *player.Player
	chunked bool
	measure bool // record frame-to-wire latency (HTTP-FLV)
	// joined is when the player subscribed: packets older than that came
	// from the GOP cache and say nothing about frame-to-wire latency.
	joined int64
	queued atomic.Bool

	// Owned by the shard's goroutine.
	pending      []byte
	lastProgress time.Time
	finished     bool
}

// start writes the response head and the format header, then hands the
// connection to its shard.
func (c *liveConn) start(contentType string) error {
	if tc, ok := c.conn.(*net.TCPConn); ok {
		tc.SetWriteBuffer(sendBuffer)
	}
	sc, ok := c.conn.(syscall.Conn)
	if !ok {
		return errNotSocket
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	c.raw = raw
	head := "HTTP/1.1 200 OK\r\nContent-Type: " + contentType + "\r\nCache-Control: no-cache, no-store\r\n" +
		"Access-Control-Allow-Origin: *\r\nConnection: close\r\n"
	if c.chunked {
		head += "Transfer-Encoding: chunked\r\n"
	}
	b := []byte(head + "\r\n")
	if h := c.rd.Header(); len(h) > 0 {
		if c.chunked {
			b = append(b, []byte(strconvHex(len(h))+"\r\n")...)
		}
		b = append(b, h...)
		if c.chunked {
			b = append(b, crlf...)
		}
	}
	c.conn.SetWriteDeadline(time.Now().Add(c.srv.cfg.WriteTimeout))
	n, err := c.conn.Write(b)
	c.p.AddBytes(n)
	c.srv.bytesOut.Add(uint64(n))
	if err != nil {
		return err
	}
	c.conn.SetWriteDeadline(time.Time{})
	c.joined = c.srv.hub.Now()
	c.lastProgress = time.Now()
	c.rd.SetNotify(func() { c.shard.enqueue(c) })
	return nil
}

// close ends the response: the connection, the reader and the player.
func (c *liveConn) close(err error) {
	c.conn.Close()
	c.rd.Close()
	c.srv.endLive(c, err)
}
