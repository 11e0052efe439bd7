package gb28181

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
	"github.com/svcplatform/svc/controlplane/fault"
	"go.uber.org/zap"
)

// Errors of invitations.
var (
	// ErrInviteRejected: the device answered the INVITE with a failure
	// (486 busy, 404 no such channel, ...); 502 gb28181_invite_rejected.
	ErrInviteRejected = fault.New(fault.BadGateway, "gb28181_invite_rejected", "the device refused the INVITE")
	// ErrInviteTimeout: no final answer within timeoutSeconds; 504
	// gb28181_invite_timeout.
	ErrInviteTimeout = fault.NewRetryable(fault.GatewayTimeout, "gb28181_invite_timeout", "the device did not answer the INVITE in time")
	// ErrBadAnswer: the device's SDP answer cannot be used.
	ErrBadAnswer = fault.New(fault.BadGateway, "gb28181_invite_rejected", "the device's SDP answer is unusable")
)

// Media transports of an invitation, named from the platform's side like
// the engine's RTP servers: with TCPPassive the platform listens (the
// offer says a=setup:passive), with TCPActive it connects to the device.
const (
	MediaUDP        = "udp"
	MediaTCPPassive = "tcp-passive"
	MediaTCPActive  = "tcp-active"
)

// InviteRequest asks a device to send a channel's media to a leased port.
type InviteRequest struct {
	DeviceID  DeviceID
	ChannelID string
	// MediaIP and MediaPort are where the engine receives (c= and m=).
	MediaIP   string
	MediaPort int
	Transport string
	// Playback: s=Playback with t= start and end (Unix seconds), else Play.
	Playback   bool
	Start, End int64
	// SSRC is the y= value (NewSSRC); 0 makes one. The engine's RTP
	// server is opened with it before the INVITE, so it drops packets of
	// any other stream from the start.
	SSRC uint32
	// Timeout bounds waiting for the device's answer; default 10 s.
	Timeout time.Duration
	// Origin is the control node that relayed the INVITE ("" when it was
	// not relayed): the device ending the session is told there.
	Origin string
}

// MediaSession is an accepted invitation: a SIP dialog whose media flows
// until Bye.
type MediaSession struct {
	DeviceID  DeviceID `json:"deviceId"`
	ChannelID string   `json:"channelId"`
	// SSRC is the y= of the offer (the device's answer may override it).
	SSRC uint32 `json:"ssrc"`
	// DeviceMedia is the device's c=/m= address (the peer a TCPActive
	// engine dials).
	DeviceMedia string `json:"deviceMedia,omitempty"`
	CallID      string `json:"callId"`
	// NodeID is the control node holding the dialog: its BYE goes there.
	NodeID string `json:"nodeId"`

	// dialog is set on the holding node only.
	dialog *sipgo.DialogClientSession
	once   sync.Once
}

// NewSSRC makes a GB/T 28181 SSRC: ten decimal digits, the first 0 for
// live and 1 for history, then digits 4-8 of the domain, then a sequence.
func (s *Service) NewSSRC(playback bool) uint32 {
	n, _ := s.ssrcFor(playback)
	return n
}

func (s *Service) ssrcFor(playback bool) (uint32, string) {
	s.mu.Lock()
	s.ssrcSeq = (s.ssrcSeq + 1) % 10000
	seq := s.ssrcSeq
	s.mu.Unlock()
	dom := s.cfg.Domain + "00000000"
	lead := "0"
	if playback {
		lead = "1"
	}
	str := fmt.Sprintf("%s%s%04d", lead, dom[3:8], seq)
	n, _ := strconv.ParseUint(str, 10, 32)
	return uint32(n), str
}

// offer builds the SDP of an INVITE (GB/T 28181 annex C).
func (s *Service) offer(r InviteRequest, ssrc string) string {
	proto := "RTP/AVP"
	if r.Transport != MediaUDP {
		proto = "TCP/RTP/AVP"
	}
	name, timing := "Play", "0 0"
	if r.Playback {
		name, timing = "Playback", fmt.Sprintf("%d %d", r.Start, r.End)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "v=0\r\no=%s 0 0 IN IP4 %s\r\ns=%s\r\n", s.cfg.ID, r.MediaIP, name)
	if r.Playback {
		fmt.Fprintf(&b, "u=%s:0\r\n", r.ChannelID)
	}
	fmt.Fprintf(&b, "c=IN IP4 %s\r\nt=%s\r\nm=video %d %s 96 97 98\r\na=recvonly\r\n", r.MediaIP, timing, r.MediaPort, proto)
	b.WriteString("a=rtpmap:96 PS/90000\r\na=rtpmap:97 MPEG4/90000\r\na=rtpmap:98 H264/90000\r\n")
	switch r.Transport {
	case MediaTCPPassive:
		b.WriteString("a=setup:passive\r\na=connection:new\r\n")
	case MediaTCPActive:
		b.WriteString("a=setup:active\r\na=connection:new\r\n")
	}
	fmt.Fprintf(&b, "y=%s\r\n", ssrc)
	return b.String()
}

// Invite asks a device for a channel's media and waits for its answer,
// through the control node holding the device's transport: this one when
// the device registered here, otherwise the node its record names.
func (s *Service) Invite(ctx context.Context, r InviteRequest) (*MediaSession, error) {
	if !ValidCode(string(r.DeviceID)) || !ValidCode(r.ChannelID) {
		return nil, fmt.Errorf("%w: deviceId and channelId: %w", ErrInvalid, ErrDeviceID)
	}
	h, err := s.holder(ctx, r.DeviceID)
	if err != nil {
		return nil, err
	}
	if h == "" {
		return s.LocalInvite(ctx, r)
	}
	if r.Timeout <= 0 {
		r.Timeout = 10 * time.Second
	}
	r.Origin = s.nodeID
	m, err := s.relay.Invite(ctx, h, r)
	if err != nil {
		return nil, err
	}
	m.NodeID = h
	return m, nil
}

// LocalInvite is Invite through this node's transport only: what a
// relayed INVITE runs. The dialog stays here, found by its Call-ID.
func (s *Service) LocalInvite(ctx context.Context, r InviteRequest) (*MediaSession, error) {
	if !ValidCode(string(r.DeviceID)) || !ValidCode(r.ChannelID) {
		return nil, fmt.Errorf("%w: deviceId and channelId: %w", ErrInvalid, ErrDeviceID)
	}
	if net.ParseIP(r.MediaIP) == nil || r.MediaPort < 1 || r.MediaPort > 65535 {
		return nil, fmt.Errorf("%w: media address %s:%d", ErrInvalid, r.MediaIP, r.MediaPort)
	}
	switch r.Transport {
	case MediaUDP, MediaTCPPassive, MediaTCPActive:
	default:
		return nil, fmt.Errorf("%w: transport %q is not udp, tcp-passive or tcp-active", ErrInvalid, r.Transport)
	}
	if r.Timeout <= 0 {
		r.Timeout = 10 * time.Second
	}
	s.mu.Lock()
	p := s.live[r.DeviceID]
	var transport, addr string
	if p != nil && p.status == StatusOnline {
		transport, addr = p.transport, p.addr
	}
	s.mu.Unlock()
	if addr == "" {
		return nil, fmt.Errorf("%w: %s", ErrDeviceOffline, r.DeviceID)
	}
	host, portStr, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portStr)
	ssrc, ssrcStr := r.SSRC, fmt.Sprintf("%010d", r.SSRC)
	if ssrc == 0 {
		ssrc, ssrcStr = s.ssrcFor(r.Playback)
	}
	recipient := sip.Uri{User: r.ChannelID, Host: host, Port: port}
	req := sip.NewRequest(sip.INVITE, recipient)
	req.SetTransport(strings.ToUpper(transport))
	req.SetDestination(addr)
	from := &sip.FromHeader{Address: sip.Uri{User: s.cfg.ID, Host: s.cfg.Domain}, Params: sip.NewParams()}
	from.Params.Add("tag", sip.GenerateTagN(16))
	req.AppendHeader(from)
	req.AppendHeader(&sip.ToHeader{Address: sip.Uri{User: r.ChannelID, Host: s.cfg.Domain}, Params: sip.NewParams()})
	req.AppendHeader(sip.NewHeader("Subject", fmt.Sprintf("%s:%s,%s:0", r.ChannelID, ssrcStr, s.cfg.ID)))
	req.AppendHeader(sip.NewHeader("Content-Type", "APPLICATION/SDP"))
	req.SetBody([]byte(s.offer(r, ssrcStr)))
	ictx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	dialog, err := s.dialogs.WriteInvite(ictx, req)
	if err != nil {
		return nil, fmt.Errorf("INVITE %s/%s: %w", r.DeviceID, r.ChannelID, err)
	}
	if err := dialog.WaitAnswer(ictx, sipgo.AnswerOptions{}); err != nil {
		dialog.Close()
		var rejected *sipgo.ErrDialogResponse
		if errors.As(err, &rejected) {
			return nil, fmt.Errorf("%w: %d %s", ErrInviteRejected, rejected.Res.StatusCode, rejected.Res.Reason)
		}
		if ictx.Err() != nil {
			return nil, fmt.Errorf("%w (%s)", ErrInviteTimeout, r.Timeout)
		}
		return nil, fmt.Errorf("INVITE %s/%s: %w", r.DeviceID, r.ChannelID, err)
	}
	if err := dialog.Ack(ctx); err != nil {
		dialog.Close()
		return nil, fmt.Errorf("ACK %s/%s: %w", r.DeviceID, r.ChannelID, err)
	}
	m := &MediaSession{DeviceID: r.DeviceID, ChannelID: r.ChannelID, SSRC: ssrc, dialog: dialog, CallID: req.CallID().Value(), NodeID: s.nodeID}
	if res := dialog.InviteResponse; res != nil {
		ip, mport, y := parseAnswer(string(res.Body()))
		if ip != "" && mport > 0 {
			m.DeviceMedia = net.JoinHostPort(ip, strconv.Itoa(mport))
		}
		if n, err := strconv.ParseUint(y, 10, 32); err == nil && y != "" {
			m.SSRC = uint32(n)
		}
	}
	if r.Transport == MediaTCPActive && m.DeviceMedia == "" {
		s.Bye(ctx, m)
		return nil, fmt.Errorf("%w: no media address for tcp-active", ErrBadAnswer)
	}
	if err := s.holdDialog(ctx, m, r.Playback, r.Origin); err != nil {
		s.Bye(ctx, m)
		return nil, err
	}
	s.log.Info("GB28181 INVITE accepted", zap.String("deviceId", string(r.DeviceID)), zap.String("channelId", r.ChannelID),
		zap.Uint32("ssrc", m.SSRC), zap.String("transport", r.Transport), zap.String("callId", m.CallID))
	return m, nil
}

// Bye ends a media session (once): its BYE is sent by the node holding
// the dialog, relayed there when that is another node.
func (s *Service) Bye(ctx context.Context, m *MediaSession) error {
	var err error
	m.once.Do(func() {
		if m.dialog == nil {
			if m.NodeID != s.nodeID && s.relay != nil {
				err = s.relay.Bye(ctx, m.NodeID, m.CallID)
				return
			}
			err = s.LocalBye(ctx, m.CallID)
			return
		}
		bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		err = m.dialog.Bye(bctx)
		m.dialog.Close()
		s.dropDialog(context.WithoutCancel(ctx), m.CallID)
	})
	return err
}

// LocalBye ends the dialog this node holds with callID: what a relayed
// BYE runs. A dialog already ended (the device hung up) is not an error.
func (s *Service) LocalBye(ctx context.Context, callID string) error {
	s.mu.Lock()
	m := s.sessions[callID]
	s.mu.Unlock()
	if m == nil {
		return nil
	}
	return s.Bye(ctx, m)
}

// parseAnswer reads the c= address, the first m= port and y= of an SDP.
func parseAnswer(sdp string) (ip string, port int, ssrc string) {
	for _, line := range strings.Split(sdp, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "c=IN IP4 "):
			ip = strings.TrimSpace(strings.TrimPrefix(line, "c=IN IP4 "))
		case strings.HasPrefix(line, "m=") && port == 0:
			if f := strings.Fields(line); len(f) >= 2 {
				port, _ = strconv.Atoi(f[1])
			}
		case strings.HasPrefix(line, "y="):
			ssrc = strings.TrimPrefix(line, "y=")
		}
	}
	return ip, port, ssrc
}

// onBye takes a device's BYE (it ended the stream); the media session's
// RTP server times out on its own.
func (s *Service) onBye(req *sip.Request, tx sip.ServerTransaction) {
	s.log.Info("GB28181 device hung up", zap.String("callId", callID(req)), zap.String("source", req.Source()))
	s.respond(tx, req, 200, "OK", nil)
	s.mediaEnded(callID(req), "the device hung up (BYE)")
	s.mu.Lock()
	m := s.sessions[callID(req)]
	s.mu.Unlock()
	if m != nil {
		m.once.Do(func() { m.dialog.Close() })
		s.dropDialog(s.ctx, m.CallID)
	}
}
