package rtc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/pion/dtls/v3"
	"github.com/pion/interceptor"
	"github.com/pion/webrtc/v4"
	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
)

// Config shapes the server.
type Config struct {
	// UDPAddr is the one UDP port every peer's media uses (ICE UDP mux).
	UDPAddr string
	// TCPAddr, when set, accepts ICE-TCP (RFC 6544 passive candidates) for
	// peers whose network blocks UDP.
	TCPAddr string
	// PublicIPs, when set, are announced in candidates instead of the
	// addresses the ports are bound to (a host behind 1:1 NAT).
	PublicIPs []string
	// MaxSessions bounds the WHEP and WHIP sessions together.
	MaxSessions int
}

// Host is what the server needs of the engine: players and publishers
// admitted by its hooks. Refusals wrap ErrPlayDenied, ErrPublishDenied,
// ErrStreamNotFound or ErrAlreadyPublishing so the server answers with
// their codes.
type Host interface {
	// Play admits a player of path and subscribes it to the stream in
	// format; sent counts the bytes sent to it (the flow reports' bytes),
	// leave ends it.
	Play(ctx context.Context, path media.Path, format hub.Format, protocol, remoteAddr string, params map[string]string) (rd *hub.Reader,
		sent func(n int), leave func(), err error)
	// Publish admits a publisher of path with these tracks; received
	// counts the bytes received from it (the flow reports' bytes), leave
	// ends its flow once it has stopped. params carries the session's id
	// as SessionParam.
	Publish(ctx context.Context, path media.Path, origin hub.Origin, params map[string]string, tracks []*media.Track) (pub *hub.Publisher,
		received func(n int), leave func(), err error)
}

// Refusals a Host wraps.
var (
	ErrPlayDenied        = &Error{http.StatusForbidden, "play_denied", "playback denied"}
	ErrPublishDenied     = &Error{http.StatusForbidden, "publish_denied", "publishing denied"}
	ErrStreamNotFound    = &Error{http.StatusNotFound, "stream_not_found", "no such stream"}
	ErrAlreadyPublishing = &Error{http.StatusConflict, "already_publishing", "the stream already has a publisher"}
)

// socketBuffer is the shared UDP port's kernel buffer size, each way.
const socketBuffer = 8 << 20

// ICE liveness: how long a peer may be silent before its connection is
// Disconnected, and then Failed (the session ends), and how often the
// server sends keepalives.
const (
	ICEDisconnectedTimeout = 5 * time.Second
	ICEFailedTimeout       = 5 * time.Second
	iceKeepalive           = 2 * time.Second
)

// Protocol names WebRTC players and publishers in hooks and listings.
const Protocol = "webrtc"

// SessionParam is the player (and publisher) parameter that carries a
// WHEP (WHIP) session's id (the last segment of its resource URL); flow
// reports show it as the player's viewer id (the publisher's id).
const SessionParam = "svc_viewer"

// Server is the WebRTC server.
type Server struct {
	cfg  Config
	host Host
	log  *zap.Logger
	api  *webrtc.API // WHEP viewers
	// whipAPI answers publishers with the codecs the hub carries only.
	whipAPI *webrtc.API
	udp     net.PacketConn
	tcp     net.Listener

	// logsOff silences pion once the server has closed.
	logsOff logGate

	mu       sync.Mutex
	sessions map[string]session
	closed   bool
	wg       sync.WaitGroup
}

// session is a WHEP viewer or a WHIP publisher.
type session interface {
	// addCandidates trickles a PATCH's candidates into the session.
	addCandidates(f *candidateFragment) error
	// close ends the session; the server forgets it.
	close(reason error)
	// path is the stream the session plays or publishes.
	path() media.Path
}

// New opens the server's ports.
func New(cfg Config, host Host, log *zap.Logger) (*Server, error) {
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 2000
	}
	s := &Server{cfg: cfg, host: host, log: log, sessions: map[string]session{}}
	udp, err := net.ListenPacket("udp", cfg.UDPAddr)
	if err != nil {
		return nil, fmt.Errorf("rtc: udp %s: %w", cfg.UDPAddr, err)
	}
	s.udp = udp
	if uc, ok := udp.(*net.UDPConn); ok {
		// One socket carries every peer's media: give it room for bursts
		// (a keyframe to hundreds of viewers at once). The kernel caps
		// these at net.core.{r,w}mem_max, which host tuning raises.
		_ = uc.SetReadBuffer(socketBuffer)
		_ = uc.SetWriteBuffer(socketBuffer)
		udp = newBatchConn(uc)
		s.udp = udp
	}
	logs := pionLogs{log: log.Named("pion"), closed: &s.logsOff}
	var se webrtc.SettingEngine
	se.LoggerFactory = logs
	se.SetICEUDPMux(webrtc.NewICEUDPMux(logs.NewLogger("udpmux"), udp))
	networks := []webrtc.NetworkType{webrtc.NetworkTypeUDP4, webrtc.NetworkTypeUDP6}
	if cfg.TCPAddr != "" {
		tcp, err := net.Listen("tcp", cfg.TCPAddr)
		if err != nil {
			udp.Close()
			return nil, fmt.Errorf("rtc: ice-tcp %s: %w", cfg.TCPAddr, err)
		}
		s.tcp = tcp
		se.SetICETCPMux(webrtc.NewICETCPMux(logs.NewLogger("tcpmux"), tcp, 32))
		networks = append(networks, webrtc.NetworkTypeTCP4, webrtc.NetworkTypeTCP6)
	}
	se.SetNetworkTypes(networks)
	// AES-GCM (one AES-NI pass and GHASH) costs less per packet than
	// AES-CM with HMAC-SHA1, and AES-128 less than AES-256; the DTLS server
	// (a browser, when the engine answers) picks from this list.
	// AES-CM-HMAC-SHA1 stays for peers without GCM (ffmpeg's WHIP muxer).
	se.SetSRTPProtectionProfiles(dtls.SRTP_AEAD_AES_128_GCM, dtls.SRTP_AES128_CM_HMAC_SHA1_80)
	// A peer that vanishes (a killed browser, a cable pulled) sends no
	// DTLS close: pion's defaults notice it only after 5 s + 25 s without
	// traffic. With keepalives every 2 s, 5 s of silence is Disconnected
	// and 5 s more Failed, so a publication fails (and a subscription
	// ends) about 10 s after its peer fell silent.
	se.SetICETimeouts(ICEDisconnectedTimeout, ICEFailedTimeout, iceKeepalive)
	if ua, ok := udp.LocalAddr().(*net.UDPAddr); ok && ua.IP.IsLoopback() {
		// A server bound to loopback (tests, a host behind a local proxy)
		// has only loopback candidates to give.
		se.SetIncludeLoopbackCandidate(true)
	}
	if len(cfg.PublicIPs) > 0 {
		if err := se.SetICEAddressRewriteRules(webrtc.ICEAddressRewriteRule{External: cfg.PublicIPs,
			AsCandidateType: webrtc.ICECandidateTypeHost}); err != nil {
			s.closePorts()
			return nil, fmt.Errorf("rtc: publicIps: %w", err)
		}
	}
	for _, publish := range []bool{false, true} {
		me := &webrtc.MediaEngine{}
		if err := registerCodecs(me, publish); err != nil {
			s.closePorts()
			return nil, err
		}
		ir, err := interceptors(me, publish)
		if err != nil {
			s.closePorts()
			return nil, fmt.Errorf("rtc: interceptors: %w", err)
		}
		api := webrtc.NewAPI(webrtc.WithSettingEngine(se), webrtc.WithMediaEngine(me), webrtc.WithInterceptorRegistry(ir))
		if publish {
			s.whipAPI = api
		} else {
			s.api = api
		}
	}
	log.Info("WebRTC server listening", zap.String("udp", udp.LocalAddr().String()), zap.Stringer("tcp", addrOf(s.tcp)))
	return s, nil
}

// interceptors are pion's defaults but its stats interceptor, which
// records every packet sent for GetStats, which the engine never calls;
// and, for WHEP viewers (not publish), with the engine's NACK responder,
// which keeps references to the shared payloads where pion's copies every
// packet (nack_responder.go). It is registered first: its writer is the
// one under the others, for retransmissions.
func interceptors(me *webrtc.MediaEngine, publish bool) (*interceptor.Registry, error) {
	ir := &interceptor.Registry{}
	if publish {
		if err := webrtc.ConfigureNack(me, ir); err != nil {
			return nil, err
		}
	} else {
		ir.Add(nackResponderFactory{})
	}
	if err := webrtc.ConfigureRTCPReports(ir); err != nil {
		return nil, err
	}
	if err := webrtc.ConfigureSimulcastExtensionHeaders(me); err != nil {
		return nil, err
	}
	if err := webrtc.ConfigureTWCCSender(me, ir); err != nil {
		return nil, err
	}
	return ir, nil
}

func addrOf(ln net.Listener) net.Addr {
	if ln == nil {
		return &net.TCPAddr{}
	}
	return ln.Addr()
}

func (s *Server) closePorts() {
	s.udp.Close()
	if s.tcp != nil {
		s.tcp.Close()
	}
}

// UDPAddr is the address of the shared UDP port.
func (s *Server) UDPAddr() net.Addr { return s.udp.LocalAddr() }

// TCPAddr is the address of the ICE-TCP port, nil when it is off.
func (s *Server) TCPAddr() net.Addr {
	if s.tcp == nil {
		return nil
	}
	return s.tcp.Addr()
}

// Sessions is the number of open sessions.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Close ends every session and closes the ports.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	all := make([]session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	for _, ss := range all {
		ss.close(ErrClosed)
	}
	s.wg.Wait()
	// The mux's reader reports the closed socket as an error: not one.
	s.logsOff.turnOff()
	s.closePorts()
}

// reserve takes a session slot under a new id.
func (s *Server) reserve() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("rtc: session id: %w", err)
	}
	id := hex.EncodeToString(b[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", ErrClosed
	}
	if len(s.sessions) >= s.cfg.MaxSessions {
		return "", ErrTooManySessions
	}
	s.sessions[id] = nil
	return id, nil
}

// register fills a reserved slot; it fails when the server closed meanwhile.
func (s *Server) register(id string, ss session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.sessions[id] = ss
	s.wg.Add(1)
	return true
}

// release forgets a session (or an unfilled reservation).
func (s *Server) release(id string, filled bool) {
	s.mu.Lock()
	delete(s.sessions, id)
	s.mu.Unlock()
	if filled {
		s.wg.Done()
	}
}

func (s *Server) lookup(id string, path media.Path) (session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	if ss == nil || ss.path() != path {
		return nil, ErrSessionNotFound
	}
	return ss, nil
}

// newPeerConnection makes a peer connection for a viewer or, with publish,
// a publisher.
func (s *Server) newPeerConnection(publish bool) (*webrtc.PeerConnection, error) {
	api := s.api
	if publish {
		api = s.whipAPI
	}
	pc, err := api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		return nil, fmt.Errorf("rtc: peer connection: %w", err)
	}
	return pc, nil
}

// answer applies the offer, makes the answer and waits for the candidates
// of the shared ports (immediate with a mux), so the answer is complete
// and the client need not trickle. A publisher's answer prefers H.264.
func answer(ctx context.Context, pc *webrtc.PeerConnection, offerSDP string, publish bool) (string, error) {
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offerSDP}); err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidSDP, err)
	}
	if publish {
		preferH264(pc)
	}
	ans, err := pc.CreateAnswer(nil)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoCommonCodec, err)
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(ans); err != nil {
		return "", fmt.Errorf("rtc: local description: %w", err)
	}
	select {
	case <-gathered:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return pc.LocalDescription().SDP, nil
}

// errorIsClosed reports whether err only says a connection ended.
func errorIsClosed(err error) bool {
	return err == nil || errors.Is(err, net.ErrClosed) || errors.Is(err, context.Canceled) ||
		errors.Is(err, hub.ErrReaderClosed) || errors.Is(err, hub.ErrStreamClosed)
}
