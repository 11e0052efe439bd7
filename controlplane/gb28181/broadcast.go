package gb28181

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/emiago/sipgo/sip"
	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/fault"
)

// Audio broadcast (GB/T 28181 9.12), the talk path: the platform notifies
// a device of a broadcast with a MESSAGE; the device INVITEs the platform
// for audio, offering where it receives (m=audio, PCMA or PCMU); the
// platform answers with where it sends from and then sends G.711 RTP.

// ErrBroadcastTimeout: the device accepted the broadcast but sent no
// INVITE in time; 504 gb28181_invite_timeout.
var ErrBroadcastTimeout = fault.NewRetryable(fault.GatewayTimeout, "gb28181_invite_timeout", "the device did not INVITE the platform for the broadcast in time")

// AudioInvite is a device's INVITE for a broadcast's audio.
type AudioInvite struct {
	DeviceID  DeviceID
	ChannelID string
	// DeviceMedia is where the device receives RTP (c= and m=audio).
	DeviceMedia string
	// PayloadType is 8 (PCMA) or 0 (PCMU), the first G.711 the device offers.
	PayloadType int
	SSRC        uint32
	CallID      string
}

// broadcastWait is a broadcast waiting for its device's INVITE.
type broadcastWait struct {
	device  DeviceID
	channel string
	// answer opens the sender and returns the address it sends from.
	answer func(AudioInvite) (ip string, port int, err error)
	got    chan AudioInvite
}

// Broadcast notifies a device of an audio broadcast to one of its
// channels and waits (up to timeout) for the device's INVITE; answer is
// called with the INVITE before the platform's 200 and returns the
// address the platform's sender sends from.
func (s *Service) Broadcast(ctx context.Context, id DeviceID, channelID string, timeout time.Duration,
	answer func(AudioInvite) (ip string, port int, err error)) (AudioInvite, error) {
	if !ValidCode(string(id)) || !ValidCode(channelID) {
		return AudioInvite{}, fmt.Errorf("%w: deviceId and channelId: %w", ErrInvalid, ErrDeviceID)
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	w := &broadcastWait{device: id, channel: channelID, answer: answer, got: make(chan AudioInvite, 1)}
	s.mu.Lock()
	if s.broadcasts[id] != nil {
		s.mu.Unlock()
		return AudioInvite{}, fmt.Errorf("%w: a broadcast to %s is already being set up", ErrBroadcastBusy, id)
	}
	s.broadcasts[id] = w
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.broadcasts[id] == w {
			delete(s.broadcasts, id)
		}
		s.mu.Unlock()
	}()
	body := fmt.Sprintf("<?xml version=\"1.0\" encoding=\"GB2312\"?>\r\n<Notify>\r\n<CmdType>Broadcast</CmdType>\r\n<SN>%d</SN>\r\n"+
		"<SourceID>%s</SourceID>\r\n<TargetID>%s</TargetID>\r\n</Notify>\r\n", s.nextSN(), s.cfg.ID, channelID)
	if err := s.sendManscdp(ctx, id, body); err != nil {
		return AudioInvite{}, fmt.Errorf("%w: %w", ErrDeviceUnreachable, err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case inv := <-w.got:
		return inv, nil
	case <-t.C:
		return AudioInvite{}, fmt.Errorf("%w (%s)", ErrBroadcastTimeout, timeout)
	case <-ctx.Done():
		return AudioInvite{}, ctx.Err()
	}
}

// ErrBroadcastBusy: 409 conflict.
var ErrBroadcastBusy = fault.NewRetryable(fault.Conflict, "conflict", "a broadcast to the device is already being set up")

// onInvite takes a device's INVITE for a broadcast's audio; the platform
// INVITEs devices for video, never the other way round otherwise.
func (s *Service) onInvite(req *sip.Request, tx sip.ServerTransaction) {
	from := req.From()
	if from == nil || !ValidCode(from.Address.User) {
		s.respond(tx, req, 400, "Bad Request: the From user is not a 20-digit GB28181 code", nil)
		return
	}
	caller := from.Address.User
	s.mu.Lock()
	var w *broadcastWait
	for _, b := range s.broadcasts {
		if string(b.device) == caller || b.channel == caller {
			w = b
		}
	}
	s.mu.Unlock()
	if w == nil {
		s.respond(tx, req, 403, "Forbidden: no broadcast is waiting for this device", nil)
		return
	}
	inv, err := parseAudioOffer(string(req.Body()))
	if err != nil {
		s.log.Info("GB28181 broadcast INVITE refused", zap.String("deviceId", caller), zap.Error(err))
		s.respond(tx, req, 488, "Not Acceptable Here", nil)
		return
	}
	inv.DeviceID, inv.ChannelID, inv.CallID = w.device, w.channel, callID(req)
	ip, port, err := w.answer(inv)
	if err != nil {
		s.log.Warn("GB28181 broadcast sender not opened", zap.String("deviceId", caller), zap.Error(err))
		s.respond(tx, req, 500, "Server Internal Error", nil)
		return
	}
	sdp := fmt.Sprintf("v=0\r\no=%s 0 0 IN IP4 %s\r\ns=Play\r\nc=IN IP4 %s\r\nt=0 0\r\nm=audio %d RTP/AVP %d\r\na=sendonly\r\na=rtpmap:%d %s/8000\r\ny=%010d\r\n",
		s.cfg.ID, ip, ip, port, inv.PayloadType, inv.PayloadType, map[int]string{0: "PCMU", 8: "PCMA"}[inv.PayloadType], inv.SSRC)
	res := sip.NewResponseFromRequest(req, 200, "OK", []byte(sdp))
	res.AppendHeader(sip.NewHeader("Content-Type", "APPLICATION/SDP"))
	host, p, _ := net.SplitHostPort(s.udpAddr.String())
	pn, _ := strconv.Atoi(p)
	res.AppendHeader(&sip.ContactHeader{Address: sip.Uri{User: s.cfg.ID, Host: host, Port: pn}})
	if err := tx.Respond(res); err != nil {
		s.log.Info("GB28181 broadcast answer not sent", zap.String("deviceId", caller), zap.Error(err))
		return
	}
	s.log.Info("GB28181 broadcast established", zap.String("deviceId", string(inv.DeviceID)), zap.String("deviceMedia", inv.DeviceMedia),
		zap.Int("pt", inv.PayloadType), zap.String("callId", inv.CallID))
	select {
	case w.got <- inv:
	default:
	}
}

// parseAudioOffer reads a device's audio offer: c=, m=audio with a G.711
// payload type, y=.
func parseAudioOffer(sdp string) (AudioInvite, error) {
	var inv AudioInvite
	ip, port := "", 0
	inv.PayloadType = -1
	for _, line := range strings.Split(sdp, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "c=IN IP4 "):
			ip = strings.TrimSpace(strings.TrimPrefix(line, "c=IN IP4 "))
		case strings.HasPrefix(line, "m=audio "):
			f := strings.Fields(line)
			if len(f) < 4 {
				return inv, fmt.Errorf("m=audio line %q", line)
			}
			port, _ = strconv.Atoi(f[1])
			for _, pt := range f[3:] {
				if n, err := strconv.Atoi(pt); err == nil && (n == 8 || n == 0) && inv.PayloadType < 0 {
					inv.PayloadType = n
				}
			}
		case strings.HasPrefix(line, "y="):
			if n, err := strconv.ParseUint(strings.TrimPrefix(line, "y="), 10, 32); err == nil {
				inv.SSRC = uint32(n)
			}
		}
	}
	if net.ParseIP(ip) == nil || port < 1 || port > 65535 {
		return inv, fmt.Errorf("no usable audio address (c=%q, port %d)", ip, port)
	}
	if inv.PayloadType < 0 {
		return inv, fmt.Errorf("no G.711 payload type (0 or 8) offered")
	}
	inv.DeviceMedia = net.JoinHostPort(ip, strconv.Itoa(port))
	return inv, nil
}
