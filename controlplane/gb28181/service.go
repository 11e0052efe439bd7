package gb28181

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/store"
)

// Service is one control node's GB28181 signalling: the SIP server on
// UDP and TCP, the registrar and the presence of the devices whose
// transport this node holds.
type Service struct {
	cfg    Config
	store  store.Store
	nodeID string
	log    *zap.Logger
	now    func() time.Time
	nonces *nonces
	// channels receives the devices' catalogs; nil keeps no channels.
	channels ChannelStore

	ua     *sipgo.UserAgent
	server *sipgo.Server
	client *sipgo.Client

	mu   sync.Mutex
	live map[DeviceID]*presence
	// recorded are the devices this node knows to have a record: those
	// in the store when it started and those it has registered since. A
	// first REGISTER of any other device skips reading its record (the
	// Txn's guard that the key is absent keeps a wrong guess from writing
	// over a record made elsewhere).
	recorded map[DeviceID]struct{}
	// authFailed is when each device's last auth_failed event was
	// written: a device hammering a wrong password emits one a minute.
	authFailed map[DeviceID]time.Time
	// catalogs are the Catalog responses being collected.
	catalogs map[DeviceID]*catalogRun
	// records are the RecordInfo responses being collected, by SN.
	records map[int64]*recordRun
	// presetWaits are the PresetQuery answers awaited, by SN.
	presetWaits map[int64]presetWait
	// broadcasts wait for their devices' audio INVITEs, by device.
	broadcasts map[DeviceID]*broadcastWait
	// onMediaEnd is told the Call-ID of a media session the device ended
	// (MediaStatus 121 at the end of a playback, or its BYE).
	onMediaEnd func(callID string, why string)
	// onDeviceOffline is told of a device this node no longer holds online.
	onDeviceOffline func(id DeviceID, why string)
	sn              int64
	ssrcSeq         int
	// sessions are the INVITE dialogs this node holds, by Call-ID.
	sessions map[string]*MediaSession
	// origins are the nodes that relayed the INVITEs of sessions, by
	// Call-ID: the device ending one is told there.
	origins map[string]string
	// cutOff are the dialogs ended while this node was cut off from the
	// cluster, whose records and owners it could not reach then.
	cutOff []cutOffDialog
	// wasCutOff: EndDialogsCutOff ran and Rejoined has not finished.
	wasCutOff bool
	// dialogs sends INVITEs and their BYEs.
	dialogs *sipgo.DialogUA
	// relay passes a DeviceControl to the control node holding the
	// device's transport; nil answers device offline instead.
	relay Relay
	// branches keeps a request that reuses an answered one's Via branch
	// from being taken for its retransmission.
	branches branches

	udpAddr, tcpAddr net.Addr
	ctx              context.Context
	cancel           context.CancelFunc
	wg               sync.WaitGroup
}

// presence is what the holding node knows of a device between writes.
type presence struct {
	lastSeen  time.Time
	expiresAt time.Time
	window    time.Duration
	status    Status
	transport string
	addr      string
	// REGISTER rate: count within the second starting at rateStart.
	rateStart time.Time
	rateCount int
}

// authFailedEvery bounds auth_failed events per device.
const authFailedEvery = time.Minute

// New returns a service; Start serves it.
func New(cfg Config, st store.Store, chans ChannelStore, nodeID string, log *zap.Logger) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.CheckInterval <= 0 {
		cfg.CheckInterval = max(cfg.window(0, 0)/10, 100*time.Millisecond)
	}
	if cfg.CatalogTimeout <= 0 {
		cfg.CatalogTimeout = 10 * time.Second
	}
	return &Service{cfg: cfg, store: st, channels: chans, nodeID: nodeID, log: log, now: time.Now, nonces: newNonces(cfg.NonceTTL),
		live: map[DeviceID]*presence{}, recorded: map[DeviceID]struct{}{}, authFailed: map[DeviceID]time.Time{}, catalogs: map[DeviceID]*catalogRun{}, records: map[int64]*recordRun{},
		broadcasts: map[DeviceID]*broadcastWait{}, presetWaits: map[int64]presetWait{}, sessions: map[string]*MediaSession{}, origins: map[string]string{}}, nil
}

// Start listens on UDP and TCP and starts the presence loop.
func (s *Service) Start(ctx context.Context) error {
	ua, err := sipgo.NewUA(sipgo.WithUserAgent("svc"), sipgo.WithUserAgentTransportLayerOptions(sip.WithTransportLayerReadFilter(s.branches.filter)))
	if err != nil {
		return fmt.Errorf("gb28181: %w", err)
	}
	quiet := slog.New(zapHandler{log: s.log.Named("sip")})
	// The library's own transport warnings go to the same place; it has
	// one default logger per process.
	sip.SetDefaultLogger(quiet)
	srv, err := sipgo.NewServer(ua, sipgo.WithServerLogger(quiet))
	if err != nil {
		return fmt.Errorf("gb28181: %w", err)
	}
	s.ua, s.server = ua, srv
	srv.OnRegister(s.branches.track(s.onRegister))
	srv.OnMessage(s.branches.track(s.onMessage))
	s.ctx, s.cancel = context.WithCancel(context.Background())
	udp, err := net.ListenPacket("udp", s.cfg.ListenAddr)
	if err != nil {
		ua.Close()
		return fmt.Errorf("gb28181: listen udp %s: %w", s.cfg.ListenAddr, err)
	}
	tcpAddr := s.cfg.ListenAddr
	if _, port, _ := net.SplitHostPort(tcpAddr); port == "0" {
		tcpAddr = udp.LocalAddr().String() // one port for both, as devices expect
	}
	tcp, err := net.Listen("tcp", tcpAddr)
	if err != nil {
		udp.Close()
		ua.Close()
		return fmt.Errorf("gb28181: listen tcp %s: %w", tcpAddr, err)
	}
	s.udpAddr, s.tcpAddr = udp.LocalAddr(), tcp.Addr()
	if s.client, err = sipgo.NewClient(ua, sipgo.WithClientLogger(quiet), sipgo.WithClientConnectionAddr(s.udpAddr.String())); err != nil {
		udp.Close()
		tcp.Close()
		ua.Close()
		return fmt.Errorf("gb28181: %w", err)
	}
	host, port, _ := net.SplitHostPort(s.udpAddr.String())
	p, _ := strconv.Atoi(port)
	s.dialogs = &sipgo.DialogUA{Client: s.client, RewriteContact: true,
		ContactHDR: sip.ContactHeader{Address: sip.Uri{User: s.cfg.ID, Host: host, Port: p}}}
	srv.OnBye(s.branches.track(s.onBye))
	srv.OnInvite(s.branches.track(s.onInvite))
	srv.OnAck(func(*sip.Request, sip.ServerTransaction) {})
	if err := s.adoptDevices(ctx); err != nil {
		udp.Close()
		tcp.Close()
		ua.Close()
		return err
	}
	s.wg.Add(3)
	go func() { defer s.wg.Done(); srv.ServeUDP(udp) }()
	go func() { defer s.wg.Done(); srv.ServeTCP(tcp) }()
	go func() { defer s.wg.Done(); s.watchPresence() }()
	go func() {
		<-s.ctx.Done()
		udp.Close()
		tcp.Close()
	}()
	s.log.Info("GB28181 SIP server listening", zap.String("udp", s.udpAddr.String()), zap.String("tcp", s.tcpAddr.String()),
		zap.String("id", s.cfg.ID), zap.String("realm", s.cfg.Domain))
	return nil
}

// OnMediaEnd sets who is told that a device ended a media session: the
// Call-ID of its INVITE and why. Set it before devices may answer.
func (s *Service) OnMediaEnd(fn func(callID, why string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onMediaEnd = fn
}

// OnDeviceOffline sets who is told that a device this node held is
// offline here (silent, or the records say another node or nobody holds
// it): what this node still sends it (talk) stops. Set it before devices
// may register.
func (s *Service) OnDeviceOffline(fn func(id DeviceID, why string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onDeviceOffline = fn
}

func (s *Service) deviceOffline(id DeviceID, why string) {
	s.mu.Lock()
	fn := s.onDeviceOffline
	s.mu.Unlock()
	if fn != nil {
		fn(id, why)
	}
}

// mediaEnded tells onMediaEnd, if set, or the node that relayed the
// session's INVITE.
func (s *Service) mediaEnded(callID, why string) {
	s.mu.Lock()
	origin := s.origins[callID]
	s.mu.Unlock()
	if origin != "" && s.relay != nil {
		if err := s.relay.MediaEnded(s.ctx, origin, callID, why); err != nil {
			s.log.Warn("GB28181 end of a relayed session not passed on", zap.String("callId", callID), zap.String("node", origin), zap.Error(err))
		}
		return
	}
	s.LocalMediaEnded(callID, why)
}

// LocalMediaEnded tells this node's onMediaEnd that a device ended the
// session with callID: what a relayed end runs.
func (s *Service) LocalMediaEnded(callID, why string) {
	s.mu.Lock()
	fn := s.onMediaEnd
	s.mu.Unlock()
	if fn != nil && callID != "" {
		fn(callID, why)
	}
}

// UDPAddr and TCPAddr are the SIP listening addresses.
func (s *Service) UDPAddr() net.Addr { return s.udpAddr }

// TCPAddr is the SIP TCP listening address.
func (s *Service) TCPAddr() net.Addr { return s.tcpAddr }

// Close stops serving and waits for the loops.
func (s *Service) Close() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.server.Close()
	s.ua.Close()
	s.wg.Wait()
}

// adoptDevices takes over the presence of devices this node held before
// a restart: they get a full window to be heard from again.
func (s *Service) adoptDevices(ctx context.Context) error {
	devs, err := ListDevices(ctx, s.store)
	if err != nil {
		return fmt.Errorf("gb28181: load devices: %w", err)
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range devs {
		s.recorded[d.DeviceID] = struct{}{}
		if d.NodeID != s.nodeID {
			continue
		}
		s.live[d.DeviceID] = &presence{lastSeen: now, expiresAt: now.Add(time.Duration(d.Expires) * time.Second), status: d.Status,
			window: s.cfg.window(time.Duration(d.KeepaliveIntervalSec)*time.Second, d.KeepaliveCount), transport: d.Transport, addr: d.RemoteAddr}
	}
	return nil
}

// watchPresence turns devices silent for their window, or whose
// registration expired, offline.
func (s *Service) watchPresence() {
	t := time.NewTicker(s.cfg.CheckInterval)
	defer t.Stop()
	for tick := 1; ; tick++ {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		now := s.now()
		if tick%10 == 0 { // about once per offline window
			if err := s.reconcile(s.ctx); err != nil && s.ctx.Err() == nil {
				s.log.Warn("GB28181 presence reconciliation failed", zap.Error(err))
			}
		}
		var due []DeviceID
		s.mu.Lock()
		for id, p := range s.live {
			switch {
			case p.status == StatusOnline && (now.Sub(p.lastSeen) > p.window || now.After(p.expiresAt)):
				due = append(due, id)
			case p.status != StatusOnline && p.status != StatusOffline && now.Sub(p.rateStart) > time.Minute:
				delete(s.live, id) // a challenge never answered, or an unregistered device
			}
		}
		s.mu.Unlock()
		for _, id := range due {
			if err := s.markOffline(id, now); err != nil && !errors.Is(err, context.Canceled) {
				s.log.Warn("GB28181 device offline transition failed", zap.String("deviceId", string(id)), zap.Error(err))
			}
		}
	}
}

// respond answers a request, logging what could not be sent.
func (s *Service) respond(tx sip.ServerTransaction, req *sip.Request, code int, reason string, body []byte, headers ...sip.Header) {
	res := sip.NewResponseFromRequest(req, code, reason, body)
	for _, h := range headers {
		res.AppendHeader(h)
	}
	if err := tx.Respond(res); err != nil {
		s.log.Debug("SIP response not sent", zap.Int("code", code), zap.Error(err))
	}
}
