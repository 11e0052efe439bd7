package rtspserver

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/svcplatform/svc/mediaengine/rtsp"
	"go.uber.org/zap"
)

// serverUDP is the server's RTP/RTCP socket pair for UDP transport. One
// goroutine per socket reads every session's packets and routes them by
// source address (the client_port pair the client announced in SETUP);
// players are sent to from the same sockets, as RFC 2326's server_port
// says.
type serverUDP struct {
	rtp, rtcp *net.UDPConn
	log       *zap.Logger

	mu     sync.RWMutex
	routes map[netip.AddrPort]udpRoute
}

type udpRoute struct {
	sess  *serverSession
	track int
}

func listenServerUDP(addr string, log *zap.Logger) (*serverUDP, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		host, port, err2 := net.SplitHostPort(addr)
		if err2 != nil {
			return nil, fmt.Errorf("rtsp: UDP address %q: %w", addr, err)
		}
		if host == "" {
			host = "0.0.0.0"
		}
		if ap, err = netip.ParseAddrPort(net.JoinHostPort(host, port)); err != nil {
			return nil, fmt.Errorf("rtsp: UDP address %q: %w", addr, err)
		}
	}
	rtp, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(ap))
	if err != nil {
		return nil, fmt.Errorf("rtsp: listen RTP %s: %w", addr, err)
	}
	rtpPort := rtp.LocalAddr().(*net.UDPAddr).Port
	rtcp, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ap.Addr(), uint16(rtpPort+1))))
	if err != nil {
		rtp.Close()
		return nil, fmt.Errorf("rtsp: listen RTCP next to %s: %w", rtp.LocalAddr(), err)
	}
	rtp.SetReadBuffer(rtsp.UDPReadBuffer)
	rtcp.SetReadBuffer(rtsp.UDPReadBuffer)
	return &serverUDP{rtp: rtp, rtcp: rtcp, log: log, routes: map[netip.AddrPort]udpRoute{}}, nil
}

func (u *serverUDP) ports() [2]int {
	return [2]int{u.rtp.LocalAddr().(*net.UDPAddr).Port, u.rtcp.LocalAddr().(*net.UDPAddr).Port}
}

func (u *serverUDP) serve(conn *net.UDPConn, rtcp bool) {
	buf := make([]byte, 65536)
	for {
		n, from, err := conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			u.log.Debug("rtsp udp read", zap.Error(err))
			continue
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		u.mu.RLock()
		r, ok := u.routes[from]
		u.mu.RUnlock()
		if !ok {
			continue // not a session's peer (or a NAT punch)
		}
		r.sess.udpPacket(r.track, rtcp, buf[:n], time.Now())
	}
}

func (u *serverUDP) add(from netip.AddrPort, r udpRoute) {
	u.mu.Lock()
	u.routes[netip.AddrPortFrom(from.Addr().Unmap(), from.Port())] = r
	u.mu.Unlock()
}

func (u *serverUDP) removeSession(s *serverSession) {
	u.mu.Lock()
	for k, r := range u.routes {
		if r.sess == s {
			delete(u.routes, k)
		}
	}
	u.mu.Unlock()
}

func (u *serverUDP) close() {
	u.rtp.Close()
	u.rtcp.Close()
}
