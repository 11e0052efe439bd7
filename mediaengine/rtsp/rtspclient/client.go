package rtspclient

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtcp"
	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtpcodec"
	"github.com/svcplatform/svc/mediaengine/rtsp"
	"github.com/svcplatform/svc/shared/credurl"
)

// Client is one RTSP connection that pulls a stream: Dial, Describe,
// Setup, Play, then Run delivers frames until the stream or the context
// ends. The Puller wraps it with reconnection.
type Client struct {
	cfg  Config
	url  *url.URL // without user info
	conn net.Conn
	r    *rtsp.MessageReader
	wmu  sync.Mutex
	bw   *bufio.Writer
	auth clientAuth
	cseq int

	session        string
	sessionTimeout time.Duration
	public         string // the server's OPTIONS Public header

	base   *url.URL
	sd     *rtsp.SessionDescription
	tracks []*clientTrack
	udp    bool
	clock  *rtpcodec.StreamClock

	onFrame    func(*media.Frame)
	lastPacket atomic.Int64
	playing    bool
}

// errTransportRefused: the server answered SETUP with another
// transport than asked for (some force TCP).
var errTransportRefused = fmt.Errorf("%w: server chose another transport", rtsp.ErrBadTransport)

// Dial connects to the server of rawURL (rtsp://[user:pass@]host[:port]/path).
func Dial(ctx context.Context, rawURL string, cfg Config) (*Client, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "rtsp" || u.Host == "" {
		return nil, fmt.Errorf("rtsp: bad URL %q", redact(rawURL))
	}
	c := &Client{cfg: cfg, sessionTimeout: 60 * time.Second}
	c.auth.allowBasic = cfg.AllowBasicAuth
	if u.User != nil {
		c.auth.user = u.User.Username()
		c.auth.password, _ = u.User.Password()
	}
	clean := *u
	clean.User = nil
	c.url = &clean
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "554")
	}
	d := net.Dialer{Timeout: cfg.DialTimeout}
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, fmt.Errorf("rtsp: connect %s: %w", host, err)
	}
	c.conn, c.r, c.bw = conn, rtsp.NewMessageReader(conn), bufio.NewWriterSize(conn, 4096)
	return c, nil
}

// redact hides a URL's credentials (userinfo, and user and password in
// the path) and its whole query (cameras and our own tickets put secrets
// there) in errors and logs.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	if u.RawQuery != "" {
		u.RawQuery = "redacted"
	}
	return credurl.Redact(u.String())
}

// Close closes the connection (and UDP sockets) at once.
func (c *Client) Close() error {
	for _, t := range c.tracks {
		if t.udp != nil {
			t.udp.close()
		}
	}
	return c.conn.Close()
}

// Tracks are the set-up tracks.
func (c *Client) Tracks() []*media.Track {
	out := make([]*media.Track, len(c.tracks))
	for i, t := range c.tracks {
		out[i] = t.track
	}
	return out
}

// do sends a request and returns its response, answering one 401
// challenge with the URL's credentials.
func (c *Client) do(ctx context.Context, method, uri string, h rtsp.Header, body []byte) (*rtsp.Response, error) {
	for attempt := 0; ; attempt++ {
		c.cseq++
		header := append(rtsp.Header{{Name: "CSeq", Value: strconv.Itoa(c.cseq)}, {Name: "User-Agent", Value: c.cfg.UserAgent}}, h...)
		req := &rtsp.Request{Method: method, URL: uri, Header: header, Body: body}
		if c.session != "" {
			req.Header.Add("Session", c.session)
		}
		if c.auth.ready() {
			v, err := c.auth.header(method, uri)
			if err != nil {
				return nil, err
			}
			req.Header.Add("Authorization", v)
		}
		resp, err := c.roundTrip(ctx, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode == rtsp.StatusUnauthorized && attempt == 0 && c.auth.has() {
			if err := c.auth.challenged(resp.Header.Values("WWW-Authenticate")); err != nil {
				return nil, err
			}
			continue
		}
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return resp, &rtsp.StatusError{Method: method, Code: resp.StatusCode, Reason: resp.Reason, Location: resp.Header.Get("Location")}
		}
		return resp, nil
	}
}

// roundTrip writes req and reads until its response; interleaved frames
// read meanwhile are delivered.
func (c *Client) roundTrip(ctx context.Context, req *rtsp.Request) (*rtsp.Response, error) {
	deadline := time.Now().Add(c.cfg.ReadTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Now()) })
	defer stop()
	c.wmu.Lock()
	c.conn.SetWriteDeadline(deadline)
	req.Write(c.bw)
	err := c.bw.Flush()
	c.wmu.Unlock()
	if err != nil {
		return nil, c.ctxErr(ctx, err)
	}
	c.conn.SetReadDeadline(deadline)
	defer c.conn.SetReadDeadline(time.Time{})
	want := req.Header.Get("CSeq")
	var m rtsp.Message
	for {
		if err := c.r.Read(&m); err != nil {
			return nil, c.ctxErr(ctx, err)
		}
		switch {
		case m.Channel >= 0:
			c.interleaved(m.Channel, m.Payload, time.Now())
		case m.Response != nil:
			if cs := m.Response.Header.Get("CSeq"); cs == want || cs == "" {
				return m.Response, nil
			}
		case m.Request != nil:
			c.answerServerRequest(m.Request)
		}
	}
}

func (c *Client) ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// answerServerRequest answers requests a server sends to a client (some
// send OPTIONS or ANNOUNCE as keepalive or notice): 200 for OPTIONS and
// GET_PARAMETER, 501 for the rest.
func (c *Client) answerServerRequest(req *rtsp.Request) {
	resp := &rtsp.Response{StatusCode: rtsp.StatusOK, Header: rtsp.Header{{Name: "CSeq", Value: req.Header.Get("CSeq")}}}
	if req.Method != rtsp.MethodOptions && req.Method != rtsp.MethodGetParameter {
		resp.StatusCode = rtsp.StatusNotImplemented
	}
	c.wmu.Lock()
	resp.Write(c.bw)
	c.bw.Flush()
	c.wmu.Unlock()
}

// Options asks the server what it supports (some cameras insist on it
// first).
func (c *Client) Options(ctx context.Context) error {
	resp, err := c.do(ctx, rtsp.MethodOptions, c.url.String(), nil, nil)
	if err != nil {
		var se *rtsp.StatusError
		if errors.As(err, &se) && se.Code != rtsp.StatusUnauthorized {
			return nil // a server that dislikes OPTIONS may still stream
		}
		return err
	}
	c.public = resp.Header.Get("Public")
	return nil
}

// Describe fetches and parses the session description.
func (c *Client) Describe(ctx context.Context) (*rtsp.SessionDescription, error) {
	resp, err := c.do(ctx, rtsp.MethodDescribe, c.url.String(), rtsp.Header{{Name: "Accept", Value: "application/sdp"}}, nil)
	if err != nil {
		return nil, err
	}
	sd, err := rtsp.ParseSessionDescription(resp.Body)
	if err != nil {
		return nil, err
	}
	base := c.url
	for _, h := range []string{"Content-Base", "Content-Location"} {
		if v := resp.Header.Get(h); v != "" {
			if u, err := url.Parse(v); err == nil && u.Scheme != "" {
				u.User = nil
				base = u
				break
			}
		}
	}
	if sd.Control != "" && sd.Control != "*" {
		if u, err := rtsp.ResolveControl(base, sd.Control); err == nil {
			base = u
		}
	}
	c.sd, c.base = sd, base
	if len(sd.Tracks()) == 0 {
		return sd, fmt.Errorf("%w: %s offers none the engine carries", rtsp.ErrNoTracks, redact(c.url.String()))
	}
	return sd, nil
}

// Setup sets up every supported media of the description over UDP or
// TCP. A 461 answer comes back as a *StatusError.
func (c *Client) Setup(ctx context.Context, useUDP bool) error {
	c.udp = useUDP
	c.clock = rtpcodec.NewStreamClock()
	for _, m := range c.sd.Medias {
		if m.Track == nil {
			continue
		}
		u, err := rtsp.ResolveControl(c.base, m.Control)
		if err != nil {
			return err
		}
		t := &clientTrack{media: m, track: m.Track, control: u.String(), channel: 2 * len(c.tracks)}
		t.stats.clock = float64(m.Track.ClockRate)
		t.onPacket = c.notePacket
		tr := rtsp.Transport{TCP: !useUDP, Interleaved: [2]int{t.channel, t.channel + 1}}
		if useUDP {
			pair, err := listenUDPPair(localIP(c.conn), c.cfg.UDPPorts)
			if err != nil {
				return err
			}
			t.udp = pair
			tr.ClientPorts = pair.ports()
		}
		c.tracks = append(c.tracks, t) // closed by Close even if SETUP fails
		resp, err := c.do(ctx, rtsp.MethodSetup, t.control, rtsp.Header{{Name: "Transport", Value: tr.String()}}, nil)
		if err != nil {
			return err
		}
		if err := c.takeSession(resp.Header.Get("Session")); err != nil {
			return err
		}
		got, err := rtsp.ParseTransports(resp.Header.Get("Transport"))
		if err != nil {
			return err
		}
		if got[0].TCP != !useUDP {
			return fmt.Errorf("%w: asked for %s, got %q", errTransportRefused, tr, resp.Header.Get("Transport"))
		}
		if got[0].TCP && got[0].HasChannels {
			t.channel = got[0].Interleaved[0]
		}
		t.server = got[0].ServerPorts
		d, err := rtpcodec.NewDepacketizer(m.Format, m.Track, c.clock, c.emit)
		if err != nil {
			return err
		}
		t.depack = d
		if useUDP {
			t.reorder = rtpcodec.NewReorderBuffer(64, 100*time.Millisecond)
			t.deliver = t.rtpPacket
		}
	}
	return nil
}

func (c *Client) takeSession(v string) error {
	if v == "" {
		if c.session == "" {
			return fmt.Errorf("%w: SETUP answer without Session", rtsp.ErrMalformed)
		}
		return nil
	}
	id, params, _ := strings.Cut(v, ";")
	c.session = strings.TrimSpace(id)
	for _, p := range strings.Split(params, ";") {
		if k, val, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "timeout") {
			if n, err := strconv.Atoi(val); err == nil && n > 0 {
				c.sessionTimeout = time.Duration(n) * time.Second
			}
		}
	}
	return nil
}

func (c *Client) notePacket(t time.Time) { c.lastPacket.Store(t.UnixNano()) }

func (c *Client) emit(f *media.Frame) {
	if c.onFrame != nil {
		c.onFrame(f)
	}
}

// Play starts the stream. onFrame receives every frame (from one
// goroutine at a time) once Run runs.
func (c *Client) Play(ctx context.Context, onFrame func(*media.Frame)) error {
	var mu sync.Mutex
	c.onFrame = func(f *media.Frame) {
		mu.Lock()
		onFrame(f)
		mu.Unlock()
	}
	uri := c.base.String()
	if _, err := c.do(ctx, rtsp.MethodPlay, uri, rtsp.Header{{Name: "Range", Value: "npt=0.000-"}}, nil); err != nil {
		return err
	}
	c.playing = true
	c.lastPacket.Store(0)
	return nil
}

// Run receives the stream until ctx ends or the stream fails: no media
// for ReadTimeout (over UDP: none at all within UDPTimeout is
// ErrUDPTimeout), a video track that gave frames giving none for ReadTimeout
// (ErrTrackStalled), or the connection breaks. It sends keepalives within
// the session timeout and RTCP receiver reports, and waits for its
// goroutines before returning.
func (c *Client) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel(nil)
		wg.Wait()
	}()
	started := time.Now()
	if c.udp {
		serverIP := remoteIP(c.conn)
		for _, t := range c.tracks {
			wg.Add(2)
			go func() { defer wg.Done(); c.readUDP(ctx, cancel, t, t.udp.rtp, false) }()
			go func() { defer wg.Done(); c.readUDP(ctx, cancel, t, t.udp.rtcp, true) }()
			c.punch(t, serverIP)
		}
	}
	wg.Add(1)
	go func() { defer wg.Done(); c.housekeeping(ctx, cancel, started) }()
	stop := context.AfterFunc(ctx, func() { c.conn.SetReadDeadline(time.Now()) })
	defer stop()
	var m rtsp.Message
	for {
		err := c.r.Read(&m)
		if err != nil {
			if cause := context.Cause(ctx); cause != nil {
				return cause
			}
			return err
		}
		switch {
		case m.Channel >= 0:
			c.interleaved(m.Channel, m.Payload, time.Now())
		case m.Request != nil:
			c.answerServerRequest(m.Request)
		case m.Response != nil:
			if m.Response.StatusCode == rtsp.StatusSessionNotFound {
				return &rtsp.StatusError{Method: "keepalive", Code: m.Response.StatusCode, Reason: m.Response.Reason}
			}
		}
	}
}

// Teardown ends the session politely (best effort, bounded).
func (c *Client) Teardown() {
	if c.session == "" || c.base == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c.do(ctx, rtsp.MethodTeardown, c.base.String(), nil, nil)
}

func (c *Client) interleaved(ch int, payload []byte, now time.Time) {
	for _, t := range c.tracks {
		switch ch {
		case t.channel:
			t.received(payload, now)
			return
		case t.channel + 1:
			t.rtcpPacket(payload, now)
			return
		}
	}
}

func (c *Client) readUDP(ctx context.Context, cancel context.CancelCauseFunc, t *clientTrack, conn *net.UDPConn, isRTCP bool) {
	stop := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Now()) })
	defer stop()
	server := remoteIP(c.conn)
	buf := make([]byte, 65536)
	for {
		n, from, err := conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if ctx.Err() == nil {
				cancel(fmt.Errorf("rtsp: UDP read: %w", err))
			}
			return
		}
		if server.IsValid() && from.Addr().Unmap() != server {
			continue // not from the server
		}
		if isRTCP {
			t.rtcpPacket(buf[:n], time.Now())
		} else {
			t.received(buf[:n], time.Now())
		}
	}
}

// punch sends an empty receiver report to the server's ports so that a
// NAT in front of the client lets the server's packets in.
func (c *Client) punch(t *clientTrack, server netipAddr) {
	if !server.IsValid() || t.server[0] == 0 {
		return
	}
	rr, _ := (&rtcp.ReceiverReport{SSRC: randUint32()}).Marshal()
	t.udp.rtcp.WriteToUDPAddrPort(rr, addrPort(server, t.server[1]))
}

// housekeeping sends keepalives and receiver reports and watches for
// media that stopped.
func (c *Client) housekeeping(ctx context.Context, cancel context.CancelCauseFunc, started time.Time) {
	keepalive := max(c.sessionTimeout/2, time.Second)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	lastKeepalive, lastReport := time.Now(), time.Now()
	ssrc := randUint32()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			last := c.lastPacket.Load()
			switch {
			case last == 0 && c.udp && now.Sub(started) > c.cfg.UDPTimeout:
				cancel(fmt.Errorf("%w within %v", rtsp.ErrUDPTimeout, c.cfg.UDPTimeout))
				return
			case last == 0 && now.Sub(started) > c.cfg.ReadTimeout,
				last != 0 && now.Sub(time.Unix(0, last)) > c.cfg.ReadTimeout:
				cancel(fmt.Errorf("%w for %v", rtsp.ErrTimeout, c.cfg.ReadTimeout))
				return
			}
			for i, t := range c.tracks {
				if t.stalled(now, c.cfg.ReadTimeout) {
					cancel(fmt.Errorf("%w: track %d (%s) gave no frame for %v: %s", rtsp.ErrTrackStalled, i, t.track.Codec, c.cfg.ReadTimeout, t.stallReport(now)))
					return
				}
			}
			if now.Sub(lastKeepalive) >= keepalive {
				lastKeepalive = now
				c.keepalive()
			}
			if now.Sub(lastReport) >= rtsp.ReportInterval {
				lastReport = now
				c.receiverReports(ssrc, now)
			}
		}
	}
}

// keepalive refreshes the session without waiting for the answer (Run's
// reader consumes it).
func (c *Client) keepalive() {
	method := rtsp.MethodOptions
	if strings.Contains(c.public, rtsp.MethodGetParameter) {
		method = rtsp.MethodGetParameter
	}
	c.cseq++ // only this goroutine sends once Run has started
	h := rtsp.Header{{Name: "CSeq", Value: strconv.Itoa(c.cseq)}, {Name: "User-Agent", Value: c.cfg.UserAgent}, {Name: "Session", Value: c.session}}
	req := &rtsp.Request{Method: method, URL: c.base.String(), Header: h}
	if c.auth.ready() {
		if v, err := c.auth.header(method, req.URL); err == nil {
			req.Header.Add("Authorization", v)
		}
	}
	c.wmu.Lock()
	c.conn.SetWriteDeadline(time.Now().Add(c.cfg.ReadTimeout))
	req.Write(c.bw)
	if err := c.bw.Flush(); err != nil {
		c.cfg.Log.Debug("rtsp keepalive", zap.Error(err))
	}
	c.wmu.Unlock()
}

func (c *Client) receiverReports(ssrc uint32, now time.Time) {
	for _, t := range c.tracks {
		rep, ok := t.stats.report(now)
		if !ok {
			continue
		}
		b, err := (&rtcp.ReceiverReport{SSRC: ssrc, Reports: []rtcp.ReceptionReport{rep}}).Marshal()
		if err != nil {
			continue
		}
		if c.udp {
			if server := remoteIP(c.conn); server.IsValid() && t.server[1] != 0 {
				t.udp.rtcp.WriteToUDPAddrPort(b, addrPort(server, t.server[1]))
			}
			continue
		}
		var hdr [4]byte
		hdr[0], hdr[1] = '$', byte(t.channel+1)
		binary.BigEndian.PutUint16(hdr[2:], uint16(len(b)))
		c.wmu.Lock()
		c.conn.SetWriteDeadline(now.Add(c.cfg.ReadTimeout))
		c.bw.Write(hdr[:])
		c.bw.Write(b)
		c.bw.Flush()
		c.wmu.Unlock()
	}
}

// Stats sums the depacketisers' counters over the tracks.
func (c *Client) Stats() rtpcodec.DepacketizerCounts {
	var sum rtpcodec.DepacketizerCounts
	for _, t := range c.tracks {
		if t.depack == nil {
			continue
		}
		s := t.depack.Stats().Snapshot()
		sum.Packets += s.Packets
		sum.Frames += s.Frames
		sum.Lost += s.Lost
		sum.Malformed += s.Malformed
		sum.Dropped += s.Dropped
	}
	return sum
}

func randUint32() uint32 {
	var b [4]byte
	rand.Read(b[:])
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
