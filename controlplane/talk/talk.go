// Package talk owns intercom sessions: audio the platform sends to a
// device's speaker. The core is protocol-neutral: a protocol (GB28181's
// broadcast today, ONVIF's backchannel later) establishes the session and
// says where the device receives and which G.711 law it takes; this
// package then sends the G.711 audio posted to the session as RTP, 20 ms a
// packet in real time, through the push-to-talk gate.
//
// Sessions live on the control node that established them (it holds the
// device's signalling and sends the media); they are not replicated, but
// what the other nodes must be able to tell once that node is gone is
// passed to Record: the end of a session's media, and its counts each
// time its push-to-talk gate closes.
package talk

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/pion/rtp"
	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/fault"
)

// Errors of talk sessions.
var (
	// ErrNotFound: 404 not_found.
	ErrNotFound = fault.New(fault.NotFound, "not_found", "no such talk session")
	// ErrInvalid: 400 invalid_body.
	ErrInvalid = fault.New(fault.Invalid, "invalid_body", "invalid talk request")
	// ErrNotSending: the media sender was released, or push-to-talk is off;
	// 409 conflict.
	ErrNotSending = fault.New(fault.Conflict, "conflict", "the talk session is not sending")
	// ErrBufferFull: more audio than MaxBuffered waits; 429 rate_limited.
	ErrBufferFull = fault.NewRetryable(fault.RateLimited, "rate_limited", "the talk session's audio buffer is full; post in real time")
)

// Codecs (G.711 laws) and their RTP payload types.
const (
	CodecPCMA = "pcma"
	CodecPCMU = "pcmu"
)

// Media states.
const (
	MediaSending  = "Sending"
	MediaReleased = "Released"
)

// Timing of the sender: G.711 at 8 kHz, 20 ms a packet.
const (
	frameBytes = 160
	frameEvery = 20 * time.Millisecond
	// MaxBuffered bounds audio waiting to be sent: 10 s.
	MaxBuffered = 10 * 8000
)

// Remote is what a protocol established: where the device receives.
type Remote struct {
	Addr        string
	PayloadType int
	SSRC        uint32
	// Ref is the protocol's name for the session (GB28181: the Call-ID of
	// the device's INVITE), for ReleaseByRef.
	Ref string
}

// Establisher sets a session up with its device; open is called with the
// device's media address once known and returns the local address the
// sender sends from (for the protocol's answer).
type Establisher func(ctx context.Context, open func(Remote) (ip string, port int, err error)) (Remote, error)

// Session is what GET /talk/sessions/{id} shows.
type Session struct {
	SessionID   string
	Protocol    string
	DeviceID    string
	ChannelID   string
	Codec       string
	MediaState  string
	PTT         bool
	DeviceMedia string
	PacketsSent int64
	BytesSent   int64
	Buffered    int
	CreatedAt   time.Time
	ReleasedAt  *time.Time
	// ReleaseReason says why the media sender was released.
	ReleaseReason string
}

type session struct {
	mu   sync.Mutex
	info Session
	conn *net.UDPConn
	dst  *net.UDPAddr
	pt   uint8
	ssrc uint32
	seq  uint16
	ts   uint32
	buf  []byte
	ref  string
	stop chan struct{}
	done chan struct{}
}

// Service holds this node's talk sessions.
type Service struct {
	Log *zap.Logger
	// BindIP is the address the senders bind to (default 0.0.0.0; the
	// answer names 127.0.0.1 then).
	BindIP string
	// NodeID names this control node in the reason of the sessions
	// released when it shuts down.
	NodeID string
	// Record, when set, is told of a session's state worth keeping beyond
	// this node (see owner.go): after its media is released, and after
	// its push-to-talk gate closes (its counts then). It must not block.
	Record func(Session)

	mu       sync.Mutex
	sessions map[string]*session
}

// Create establishes a session with est and starts its sender.
func (s *Service) Create(ctx context.Context, protocol, deviceID, channelID string, ptt bool, est Establisher) (*Session, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	ss := &session{info: Session{SessionID: id.String(), Protocol: protocol, DeviceID: deviceID, ChannelID: channelID, PTT: ptt,
		MediaState: MediaSending, CreatedAt: time.Now().UTC()}, stop: make(chan struct{}), done: make(chan struct{})}
	open := func(r Remote) (string, int, error) {
		dst, err := net.ResolveUDPAddr("udp", r.Addr)
		if err != nil {
			return "", 0, err
		}
		bind := s.BindIP
		if bind == "" {
			bind = "0.0.0.0"
		}
		conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(bind)})
		if err != nil {
			return "", 0, err
		}
		ss.conn, ss.dst = conn, dst
		la := conn.LocalAddr().(*net.UDPAddr)
		ip := la.IP.String()
		if la.IP.IsUnspecified() {
			ip = "127.0.0.1"
		}
		return ip, la.Port, nil
	}
	r, err := est(ctx, open)
	if err != nil {
		if ss.conn != nil {
			ss.conn.Close()
		}
		return nil, err
	}
	if ss.conn == nil {
		return nil, fmt.Errorf("the %s session was established without a media address", protocol)
	}
	ss.pt, ss.ssrc, ss.seq, ss.ts = uint8(r.PayloadType), r.SSRC, uint16(rand.Uint32()), rand.Uint32()
	if ss.ssrc == 0 {
		ss.ssrc = rand.Uint32()
	}
	ss.info.Codec, ss.info.DeviceMedia, ss.ref = CodecPCMA, r.Addr, r.Ref
	if r.PayloadType == 0 {
		ss.info.Codec = CodecPCMU
	}
	s.mu.Lock()
	if s.sessions == nil {
		s.sessions = map[string]*session{}
	}
	s.sessions[ss.info.SessionID] = ss
	s.mu.Unlock()
	go s.send(ss)
	out := ss.snapshot()
	return &out, nil
}

func (ss *session) snapshot() Session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := ss.info
	out.Buffered = len(ss.buf)
	return out
}

func (s *Service) get(id string) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	if ss == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return ss, nil
}

// Get reads a session.
func (s *Service) Get(id string) (*Session, error) {
	ss, err := s.get(id)
	if err != nil {
		return nil, err
	}
	out := ss.snapshot()
	return &out, nil
}

// Write queues G.711 audio (the session's codec) to be sent in real time.
func (s *Service) Write(id string, audio []byte) (*Session, error) {
	ss, err := s.get(id)
	if err != nil {
		return nil, err
	}
	if len(audio) == 0 {
		return nil, fmt.Errorf("%w: no audio", ErrInvalid)
	}
	ss.mu.Lock()
	switch {
	case ss.info.MediaState != MediaSending:
		ss.mu.Unlock()
		return nil, fmt.Errorf("%w: the media sender was released", ErrNotSending)
	case !ss.info.PTT:
		ss.mu.Unlock()
		return nil, fmt.Errorf("%w: push-to-talk is off", ErrNotSending)
	case len(ss.buf)+len(audio) > MaxBuffered:
		ss.mu.Unlock()
		return nil, fmt.Errorf("%w (%d bytes waiting)", ErrBufferFull, len(ss.buf))
	}
	ss.buf = append(ss.buf, audio...)
	ss.mu.Unlock()
	out := ss.snapshot()
	return &out, nil
}

// SetPTT opens or closes the push-to-talk gate; closing it drops what
// waits, so nothing more reaches the device.
func (s *Service) SetPTT(id string, on bool) (*Session, error) {
	ss, err := s.get(id)
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	closed := ss.info.PTT && !on && ss.info.MediaState == MediaSending
	ss.info.PTT = on
	if !on {
		ss.buf = nil
	}
	ss.mu.Unlock()
	out := ss.snapshot()
	if closed {
		s.record(out)
	}
	return &out, nil
}

// record passes a session's state to Record, if set.
func (s *Service) record(out Session) {
	if s.Record != nil {
		s.Record(out)
	}
}

// ReleaseMedia stops the session's sender and closes its socket; the
// session (and the protocol's signalling) stays.
func (s *Service) ReleaseMedia(id string) (*Session, error) {
	return s.release(id, "released through the API")
}

func (s *Service) release(id, reason string) (*Session, error) {
	ss, err := s.get(id)
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	released := ss.info.MediaState == MediaSending
	if released {
		now := time.Now().UTC()
		ss.info.MediaState, ss.info.ReleasedAt, ss.info.ReleaseReason, ss.buf = MediaReleased, &now, reason, nil
		close(ss.stop)
	}
	ss.mu.Unlock()
	<-ss.done
	// After the sender stopped, so the counts are final.
	out := ss.snapshot()
	if released {
		s.record(out)
	}
	return &out, nil
}

// ReleaseByRef releases the media of the session the protocol names ref
// (its device hung up), saying why.
func (s *Service) ReleaseByRef(ref, why string) {
	s.mu.Lock()
	var ids []string
	for id, ss := range s.sessions {
		if ref != "" && ss.ref == ref {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	for _, id := range ids {
		s.release(id, why)
	}
}

// ReleaseDevice releases the media of the sessions of a protocol's
// device (it went offline), saying why.
func (s *Service) ReleaseDevice(protocol, deviceID, why string) {
	s.mu.Lock()
	var ids []string
	for id, ss := range s.sessions {
		if ss.info.Protocol == protocol && ss.info.DeviceID == deviceID {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	for _, id := range ids {
		s.release(id, why)
	}
}

// Close releases every session's media.
func (s *Service) Close() {
	why := "the control node holding the session shut down"
	if s.NodeID != "" {
		why = "control node " + s.NodeID + ", which held the session, shut down"
	}
	s.ReleaseAll(why)
}

// ReleaseAll releases the media of every session still sending, saying
// why: what a node cut off from the cluster does, since the leader
// records its sessions as released meanwhile (EndNode).
func (s *Service) ReleaseAll(why string) {
	s.mu.Lock()
	ids := make([]string, 0, len(s.sessions))
	for id := range s.sessions {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	for _, id := range ids {
		s.release(id, why)
	}
}

// send paces the buffer out, one 20 ms packet a tick.
func (s *Service) send(ss *session) {
	defer close(ss.done)
	defer ss.conn.Close()
	t := time.NewTicker(frameEvery)
	defer t.Stop()
	pkt := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: ss.pt, SSRC: ss.ssrc}}
	for {
		select {
		case <-ss.stop:
			return
		case <-t.C:
		}
		ss.mu.Lock()
		if !ss.info.PTT || len(ss.buf) < frameBytes {
			ss.mu.Unlock()
			continue
		}
		frame := make([]byte, frameBytes)
		copy(frame, ss.buf)
		ss.buf = ss.buf[frameBytes:]
		pkt.SequenceNumber, pkt.Timestamp, pkt.Payload = ss.seq, ss.ts, frame
		ss.seq++
		ss.ts += frameBytes
		ss.mu.Unlock()
		b, err := pkt.Marshal()
		if err == nil {
			_, err = ss.conn.WriteToUDP(b, ss.dst)
		}
		ss.mu.Lock()
		if err == nil {
			ss.info.PacketsSent++
			ss.info.BytesSent += frameBytes
		}
		ss.mu.Unlock()
		if err != nil && s.Log != nil {
			s.Log.Debug("talk packet not sent", zap.String("session", ss.info.SessionID), zap.Error(err))
		}
	}
}
