package rtspserver

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/icholy/digest"
	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtpcodec"
	"github.com/svcplatform/svc/mediaengine/rtsp"
	"github.com/svcplatform/svc/shared/digestauth"
)

// serverConn serves one RTSP connection. Its goroutine (serve) owns the
// connection's state and its session; the play goroutine shares only the
// writer, under wmu.
type serverConn struct {
	srv  *Server
	conn net.Conn
	r    *rtsp.MessageReader
	wmu  sync.Mutex // the writer is shared with the play goroutine
	bw   *bufio.Writer

	nonce   string
	user    string
	authed  bool
	session *serverSession
	hdr     [4]byte
}

// serverWriteBuffer batches a frame's packets into few writes.
const serverWriteBuffer = 64 << 10

func newServerConn(s *Server, conn net.Conn) *serverConn {
	c := &serverConn{srv: s, conn: conn, r: rtsp.NewMessageReader(conn), bw: bufio.NewWriterSize(conn, serverWriteBuffer), nonce: newID(16)}
	return c
}

func (c *serverConn) serve() {
	defer func() {
		// The connection goes first: a play goroutine blocked writing to
		// it returns at once instead of after WriteTimeout.
		c.conn.Close()
		if c.session != nil {
			c.session.close()
		}
	}()
	timeout := c.srv.cfg.SessionTimeout
	var m rtsp.Message
	lastDeadline := time.Time{}
	for {
		now := time.Now()
		// Moving the deadline costs a timer update; doing it at most
		// eight times per timeout keeps that off the per-packet path.
		if now.Sub(lastDeadline) > timeout/8 {
			c.conn.SetReadDeadline(now.Add(timeout))
			lastDeadline = now
		}
		err := c.r.Read(&m)
		if err != nil {
			if errors.Is(err, rtsp.ErrIdle) && c.session != nil && c.session.alive(timeout, time.Now()) {
				lastDeadline = time.Time{}
				continue // a UDP session whose media or RTCP still flows
			}
			if !errors.Is(err, net.ErrClosed) {
				c.srv.log.Debug("rtsp connection ended", zap.Stringer("client", c.conn.RemoteAddr()), zap.Error(err))
			}
			return
		}
		switch {
		case m.Channel >= 0:
			if c.session != nil {
				c.session.interleaved(m.Channel, m.Payload, now)
			}
		case m.Request != nil:
			resp, after := c.handle(m.Request)
			c.lock()
			c.conn.SetWriteDeadline(time.Now().Add(c.srv.cfg.WriteTimeout))
			resp.Write(c.bw)
			err := c.bw.Flush()
			c.unlock()
			if err != nil {
				return
			}
			if after != nil {
				after()
			}
		}
	}
}

func (c *serverConn) lock()   { c.wmu.Lock() }
func (c *serverConn) unlock() { c.wmu.Unlock() }

// writeInterleaved buffers one interleaved frame; the caller holds the
// writer lock and flushes.
func (c *serverConn) writeInterleaved(ch int, pkt []byte) {
	c.hdr = [4]byte{'$', byte(ch)}
	binary.BigEndian.PutUint16(c.hdr[2:], uint16(len(pkt)))
	c.bw.Write(c.hdr[:])
	c.bw.Write(pkt)
}

// handle answers one request; after, if set, runs once the response is
// written (PLAY starts sending only then).
func (c *serverConn) handle(req *rtsp.Request) (*rtsp.Response, func()) {
	resp := &rtsp.Response{StatusCode: rtsp.StatusOK, Header: rtsp.Header{{Name: "CSeq", Value: req.Header.Get("CSeq")}, {Name: "Server", Value: "svc"}}}
	if req.Proto != "RTSP/1.0" {
		resp.StatusCode = rtsp.StatusVersionNotSupported
		return resp, nil
	}
	if req.Method != rtsp.MethodOptions && !c.authenticate(req, resp) {
		return resp, nil
	}
	var after func()
	var err error
	if sid := req.Header.Get("Session"); sid != "" && c.session != nil && c.session.announced && req.Method != rtsp.MethodSetup {
		if id, _, _ := strings.Cut(sid, ";"); SessionID(strings.TrimSpace(id)) != c.session.id {
			resp.StatusCode = rtsp.StatusSessionNotFound
			return resp, nil
		}
	}
	switch req.Method {
	case rtsp.MethodOptions:
		resp.Header.Add("Public", "OPTIONS, DESCRIBE, ANNOUNCE, SETUP, PLAY, PAUSE, RECORD, TEARDOWN, GET_PARAMETER, SET_PARAMETER")
	case rtsp.MethodDescribe:
		err = c.describe(req, resp)
	case rtsp.MethodAnnounce:
		err = c.announce(req, resp)
	case rtsp.MethodSetup:
		err = c.setup(req, resp)
	case rtsp.MethodPlay:
		after, err = c.play(req, resp)
	case rtsp.MethodRecord:
		err = c.record(req, resp)
	case rtsp.MethodPause:
		if c.session == nil || c.session.publishing {
			resp.StatusCode = rtsp.StatusMethodNotValidInState
		} else {
			c.session.stopPlay()
		}
	case rtsp.MethodTeardown:
		if c.session != nil {
			c.session.close()
			c.session = nil
		}
	case rtsp.MethodGetParameter, rtsp.MethodSetParameter:
		// Keepalive.
	default:
		resp.StatusCode = rtsp.StatusNotImplemented
	}
	if err != nil {
		resp.StatusCode = statusFor(err)
		c.srv.log.Info("rtsp request refused", zap.String("method", req.Method), zap.Stringer("client", c.conn.RemoteAddr()),
			zap.Int("status", resp.StatusCode), zap.Error(err))
	}
	if c.session != nil && c.session.announced {
		resp.Header.Add("Session", string(c.session.id)+";timeout="+strconv.Itoa(int(c.srv.cfg.SessionTimeout/time.Second)))
	}
	return resp, after
}

// statusFor maps an error to the status answered.
func statusFor(err error) int {
	var se *rtsp.StatusError
	switch {
	case errors.As(err, &se):
		return se.Code
	case errors.Is(err, rtsp.ErrNotFound):
		return rtsp.StatusNotFound
	case errors.Is(err, rtsp.ErrForbidden):
		return rtsp.StatusForbidden
	case errors.Is(err, rtsp.ErrUnauthorized):
		return rtsp.StatusUnauthorized
	case errors.Is(err, rtsp.ErrBadSDP), errors.Is(err, rtsp.ErrMalformed), errors.Is(err, rtsp.ErrNoTracks):
		return rtsp.StatusBadRequest
	case errors.Is(err, rtsp.ErrBadTransport):
		return rtsp.StatusUnsupportedTransport
	}
	return rtsp.StatusInternalServerError
}

func status(code int, format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{&rtsp.StatusError{Code: code, Reason: rtsp.StatusText(code)}}, args...)...)
}

// authenticate checks Digest credentials once per connection; it fills
// resp with the challenge when they are missing or wrong.
func (c *serverConn) authenticate(req *rtsp.Request, resp *rtsp.Response) bool {
	if c.srv.cfg.Credentials == nil || c.authed {
		return true
	}
	h := req.Header.Get("Authorization")
	if h == "" && c.ticketPlayer(req) {
		return true
	}
	if h != "" {
		if creds, err := digest.ParseCredentials(h); err == nil {
			if password, ok := c.srv.cfg.Credentials(creds.Username); ok {
				if user, err := digestauth.Verify(h, req.Method, password, c.srv.cfg.Realm, c.nonce); err == nil {
					c.user, c.authed = user, true
					return true
				}
			}
		}
		c.srv.log.Info("rtsp authentication failed", zap.Stringer("client", c.conn.RemoteAddr()), zap.String("method", req.Method))
	}
	resp.StatusCode = rtsp.StatusUnauthorized
	for _, alg := range c.srv.cfg.DigestAlgorithms {
		// qop=auth as RFC 7616 asks; clients that ignore it answer
		// without qop, which Verify accepts too.
		resp.Header.Add("WWW-Authenticate", fmt.Sprintf(`Digest realm="%s", nonce="%s", algorithm=%s, qop="auth"`, c.srv.cfg.Realm, c.nonce, alg))
	}
	return false
}

// ticketPlayer reports whether a request without credentials goes on to
// the Handler, which decides by the ticket in its URL (TicketParam): a
// DESCRIBE, or a SETUP that opens a session without one, carrying the
// ticket; and the later requests of a play session such a request opened
// (SETUP URLs come from the Content-Base, which has no query). ANNOUNCE
// and RECORD never pass: publishing needs Digest.
func (c *serverConn) ticketPlayer(req *rtsp.Request) bool {
	if c.srv.cfg.TicketParam == "" {
		return false
	}
	playing := c.session != nil && !c.session.publishing
	switch req.Method {
	case rtsp.MethodSetup:
		if playing {
			return true
		}
		fallthrough
	case rtsp.MethodDescribe:
		u, err := parseRequestURL(req.URL)
		return err == nil && u.Query().Get(c.srv.cfg.TicketParam) != ""
	case rtsp.MethodPlay, rtsp.MethodPause, rtsp.MethodTeardown, rtsp.MethodGetParameter, rtsp.MethodSetParameter:
		return playing
	}
	return false
}

// parseRequestURL parses a request URL into the stream path and the query.
func parseRequestURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "rtsp" && u.Scheme != "rtsps") {
		// Not quoted back: the query may hold a ticket, and this ends
		// up in logs.
		return nil, status(rtsp.StatusBadRequest, "request URL is not an rtsp:// URL")
	}
	u.User = nil
	return u, nil
}

// requestStream parses a DESCRIBE or ANNOUNCE URL into the URL (without
// credentials) and the stream path.
func requestStream(req *rtsp.Request) (*url.URL, media.Path, error) {
	u, err := parseRequestURL(req.URL)
	if err != nil {
		return nil, media.Path{}, err
	}
	path, err := streamPath(u)
	return u, path, err
}

// streamPath makes the media.Path of a URL path "/app/stream[/more]";
// trim names a control suffix to drop first (SETUP URLs).
func streamPath(u *url.URL) (media.Path, error) {
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(segs) < 2 || segs[0] == "" || segs[1] == "" {
		return media.Path{}, status(rtsp.StatusNotFound, "path %q is not /app/stream", rtsp.Truncate(u.Path))
	}
	vhost := u.Query().Get("vhost")
	if vhost == "" {
		vhost = media.DefaultVhost
	}
	return media.Path{Vhost: vhost, App: segs[0], Stream: strings.Join(segs[1:], "/")}, nil
}

func (c *serverConn) ctx() context.Context { return c.srv.ctx }

func (c *serverConn) replaceSession(s *serverSession) {
	if c.session != nil {
		c.session.close()
	}
	c.session = s
}

func (c *serverConn) describe(req *rtsp.Request, resp *rtsp.Response) error {
	u, path, err := requestStream(req)
	if err != nil {
		return err
	}
	s := newServerSession(c, path, u)
	if err := c.openSource(s); err != nil {
		return err
	}
	c.replaceSession(s)
	body, err := rtsp.MarshalSessionDescription(s.source.Tracks(), hostOf(c.conn.LocalAddr()))
	if err != nil {
		return err
	}
	base := *u
	base.Path = strings.TrimSuffix(base.Path, "/") + "/"
	base.RawQuery = ""
	resp.Header.Add("Content-Base", base.String())
	resp.Header.Add("Content-Type", "application/sdp")
	resp.Body = body
	return nil
}

// openSource asks the handler for the stream to play and lays out the
// session's tracks, controls "trackID=<ID>".
func (c *serverConn) openSource(s *serverSession) error {
	src, err := c.srv.handler.Play(c.ctx(), &PlayRequest{SessionID: s.id, Path: s.path, Query: s.query, ClientAddr: c.conn.RemoteAddr(), User: c.user})
	if err != nil {
		return err
	}
	s.source = src
	for _, t := range src.Tracks() {
		f, err := rtpcodec.FormatForTrack(t, rtsp.DynamicPayloadType(t))
		if err != nil {
			continue
		}
		s.tracks = append(s.tracks, &sessionTrack{track: t, format: f, control: "trackID=" + strconv.Itoa(t.ID)})
	}
	if len(s.tracks) == 0 {
		src.Close()
		return fmt.Errorf("%w: %s has no track the server can send", rtsp.ErrNoTracks, s.path)
	}
	return nil
}

func (c *serverConn) announce(req *rtsp.Request, resp *rtsp.Response) error {
	u, path, err := requestStream(req)
	if err != nil {
		return err
	}
	if ct := req.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(strings.ToLower(ct), "application/sdp") {
		return status(rtsp.StatusNotAcceptable, "Content-Type %q", rtsp.Truncate(ct))
	}
	sd, err := rtsp.ParseSessionDescription(req.Body)
	if err != nil {
		return err
	}
	s := newServerSession(c, path, u)
	s.publishing = true
	// Media in formats the engine does not carry are kept (with no Track)
	// so the publisher's SETUP for them succeeds; their packets are
	// dropped. One odd track must not cost the publisher its stream.
	supported := 0
	for _, m := range sd.Medias {
		s.tracks = append(s.tracks, &sessionTrack{track: m.Track, format: m.Format, control: m.Control})
		if m.Track != nil {
			supported++
		} else {
			c.srv.log.Info("rtsp publish: a media the engine does not carry is dropped", zap.String("path", path.String()),
				zap.String("kind", m.Kind), zap.String("encoding", m.Format.EncodingName))
		}
	}
	if supported == 0 {
		return fmt.Errorf("%w: the announced SDP has no supported track", rtsp.ErrNoTracks)
	}
	w, err := c.srv.handler.Publish(c.ctx(), &PublishRequest{SessionID: s.id, Path: path, Tracks: sd.Tracks(), Query: s.query, ClientAddr: c.conn.RemoteAddr(), User: c.user})
	if err != nil {
		return err
	}
	s.writer = w
	c.replaceSession(s)
	c.srv.register(s)
	return nil
}

func (c *serverConn) setup(req *rtsp.Request, resp *rtsp.Response) error {
	u, err := parseRequestURL(req.URL)
	if err != nil {
		return err
	}
	transports, err := rtsp.ParseTransports(req.Header.Get("Transport"))
	if err != nil {
		return err
	}
	s := c.session
	if s == nil {
		// A client that skipped DESCRIBE: the stream is the URL less its
		// last segment (the control).
		base := *u
		base.Path = u.Path[:max(strings.LastIndex(strings.TrimSuffix(u.Path, "/"), "/"), 0)]
		path, err := streamPath(&base)
		if err != nil {
			return err
		}
		s = newServerSession(c, path, &base)
		s.query = u.Query()
		if err := c.openSource(s); err != nil {
			return err
		}
		c.session = s
	}
	if s.recording || s.playCancel != nil {
		return status(rtsp.StatusMethodNotValidInState, "SETUP after %s", map[bool]string{true: "RECORD", false: "PLAY"}[s.publishing])
	}
	if sid := req.Header.Get("Session"); sid != "" && s.announced {
		if id, _, _ := strings.Cut(sid, ";"); SessionID(strings.TrimSpace(id)) != s.id {
			return status(rtsp.StatusSessionNotFound, "session %q", rtsp.Truncate(sid))
		}
	}
	t := s.trackForURL(u)
	if t == nil {
		return status(rtsp.StatusNotFound, "no track at %s", u.Path)
	}
	var chosen *rtsp.Transport
	for i := range transports {
		tr := &transports[i]
		if tr.Multicast || (!tr.TCP && (c.srv.udp == nil || tr.ClientPorts[0] == 0)) {
			continue
		}
		if (tr.TCP && s.udp) || (!tr.TCP && s.tcp) {
			continue // one transport per session
		}
		chosen = tr
		break
	}
	if chosen == nil {
		return status(rtsp.StatusUnsupportedTransport, "none of %q", rtsp.Truncate(req.Header.Get("Transport")))
	}
	index := 0
	for i, x := range s.tracks {
		if x == t {
			index = i
		}
	}
	out := rtsp.Transport{TCP: chosen.TCP}
	if chosen.TCP {
		ch := 2 * index
		if chosen.HasChannels {
			ch = chosen.Interleaved[0]
		}
		for _, x := range s.tracks {
			if x != t && x.setup && (x.channel == ch || x.channel+1 == ch || x.channel == ch+1) {
				return status(rtsp.StatusUnsupportedTransport, "interleaved channel %d already in use", ch)
			}
		}
		t.channel = ch
		out.Interleaved = [2]int{ch, ch + 1}
		s.mu.Lock()
		s.tcp = true
		s.mu.Unlock()
	} else {
		ip, ok := netip.AddrFromSlice(addrIP(c.conn.RemoteAddr()))
		if !ok {
			return status(rtsp.StatusUnsupportedTransport, "no client address")
		}
		ip = ip.Unmap()
		t.clientRTP = netip.AddrPortFrom(ip, uint16(chosen.ClientPorts[0]))
		t.clientRTCP = netip.AddrPortFrom(ip, uint16(chosen.ClientPorts[1]))
		c.srv.udp.add(t.clientRTP, udpRoute{sess: s, track: index})
		c.srv.udp.add(t.clientRTCP, udpRoute{sess: s, track: index})
		out.ClientPorts = chosen.ClientPorts
		out.ServerPorts = c.srv.udp.ports()
		s.mu.Lock()
		s.udp = true
		s.mu.Unlock()
	}
	if s.publishing {
		out.Mode = "record"
	} else {
		t.ssrc = randUint32()
		t.tsBase = randUint32()
		p, err := rtpcodec.NewPacketizer(t.format, t.track, t.ssrc, uint16(randUint32()), c.srv.cfg.MTU)
		if err != nil {
			return err
		}
		t.packetizer = p
		out.SSRC, out.HasSSRC = t.ssrc, true
	}
	t.setup = true
	if !s.announced {
		s.announced = true
		if !s.publishing {
			c.srv.register(s)
		}
	}
	resp.Header.Add("Transport", out.String())
	return nil
}

func (c *serverConn) play(req *rtsp.Request, resp *rtsp.Response) (func(), error) {
	s := c.session
	if s == nil || s.publishing || !s.announced {
		return nil, status(rtsp.StatusMethodNotValidInState, "PLAY before SETUP")
	}
	if s.playCancel != nil {
		return nil, nil // already playing: a keepalive PLAY
	}
	resp.Header.Add("Range", "npt=0.000-")
	resp.Header.Add("RTP-Info", s.rtpInfo())
	return s.startPlay, nil
}

func (c *serverConn) record(req *rtsp.Request, resp *rtsp.Response) error {
	s := c.session
	if s == nil || !s.publishing || !s.announced {
		return status(rtsp.StatusMethodNotValidInState, "RECORD before ANNOUNCE and SETUP")
	}
	if s.recording {
		return nil
	}
	return s.startRecording()
}

func hostOf(a net.Addr) string {
	if ip := addrIP(a); ip != nil {
		return ip.String()
	}
	return "0.0.0.0"
}

func addrIP(a net.Addr) net.IP {
	switch v := a.(type) {
	case *net.TCPAddr:
		return v.IP
	case *net.UDPAddr:
		return v.IP
	}
	return nil
}
