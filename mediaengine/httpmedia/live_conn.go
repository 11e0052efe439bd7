package httpmedia

import (
	"context"
	"net"
	"strconv"
	"time"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/player"
)

var crlf = []byte("\r\n")

// liveConn writes one long-lived HTTP-FLV or HTTP-fMP4 response on a
// hijacked connection. Its buffers are reused for every write, so the
// steady state allocates nothing.
type liveConn struct {
	srv     *Server
	conn    net.Conn
	rd      *hub.Reader
	p       *player.Player
	chunked bool
	measure bool // record frame-to-wire latency (HTTP-FLV)

	pkts     []*hub.Packet
	bufs     [][]byte
	chunkHdr [24]byte
	deadline time.Time
	// joined is when the player subscribed: packets older than that came
	// from the GOP cache and say nothing about frame-to-wire latency.
	joined int64
}

// sendBuffer caps the kernel's send buffer of a player connection. Without
// a cap, loopback and LAN autotuning let megabytes pile up unseen in the
// kernel before the hub notices a slow player; with it, a stalled player
// is visible (and loses frames) within about a second of a 2 Mbps stream.
const sendBuffer = 256 << 10

func (c *liveConn) run(contentType string) error {
	if tc, ok := c.conn.(*net.TCPConn); ok {
		tc.SetWriteBuffer(sendBuffer)
	}
	head := "HTTP/1.1 200 OK\r\nContent-Type: " + contentType + "\r\nCache-Control: no-cache, no-store\r\n" +
		"Access-Control-Allow-Origin: *\r\nConnection: close\r\n"
	if c.chunked {
		head += "Transfer-Encoding: chunked\r\n"
	}
	c.joined = c.srv.hub.Now()
	c.pkts = make([]*hub.Packet, 0, 64)
	c.bufs = make([][]byte, 0, 72)
	if err := c.write([]byte(head+"\r\n"), c.rd.Header(), nil); err != nil {
		return err
	}
	for {
		var err error
		// Server.Close closes the reader, so Next needs no context.
		c.pkts, err = c.rd.Next(context.Background(), c.pkts[:0])
		if err != nil {
			return err
		}
		if err := c.write(nil, nil, c.pkts); err != nil {
			return err
		}
		clear(c.pkts) // let written packets go
	}
}

// write sends head (unchunked), then body and pkts as one chunk, with one
// writev.
func (c *liveConn) write(head, body []byte, pkts []*hub.Packet) error {
	bufs := c.bufs[:0]
	if head != nil {
		bufs = append(bufs, head)
	}
	size := len(body)
	for _, p := range pkts {
		size += len(p.Data)
	}
	if c.chunked && size > 0 {
		h := strconv.AppendInt(c.chunkHdr[:0], int64(size), 16)
		bufs = append(bufs, append(h, '\r', '\n'))
	}
	if body != nil {
		bufs = append(bufs, body)
	}
	for _, p := range pkts {
		bufs = append(bufs, p.Data)
	}
	if c.chunked && size > 0 {
		bufs = append(bufs, crlf)
	}
	now := time.Now()
	if now.After(c.deadline) {
		// Moving the deadline costs a timer update; once a second is enough
		// for a 15 s bound.
		c.conn.SetWriteDeadline(now.Add(c.srv.cfg.WriteTimeout))
		c.deadline = now.Add(time.Second)
	}
	nb := net.Buffers(bufs)
	n, err := nb.WriteTo(c.conn)
	clear(bufs)
	c.bufs = bufs[:0]
	c.p.AddBytes(int(n))
	c.srv.bytesOut.Add(uint64(n))
	if c.measure && err == nil {
		// The oldest live packet of the batch waited longest.
		for _, p := range pkts {
			if p.Arrived >= c.joined {
				c.srv.latency.record(c.srv.hub.Since(p.Arrived))
				break
			}
		}
	}
	return err
}
