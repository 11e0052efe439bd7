package rtspclient

import (
	"fmt"
	"math/rand/v2"
	"net"

	"github.com/svcplatform/svc/mediaengine/rtsp"
)

// udpPair is a client's RTP and RTCP sockets for one track, on an even
// port and the next one (RFC 3550 section 11).
type udpPair struct {
	rtp, rtcp *net.UDPConn
}

// listenUDPPair binds a pair on ip within ports ([0, 0]: any).
func listenUDPPair(ip net.IP, ports [2]int) (*udpPair, error) {
	try := func(port int) (*udpPair, error) {
		rtp, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip, Port: port})
		if err != nil {
			return nil, err
		}
		p := rtp.LocalAddr().(*net.UDPAddr).Port
		if p%2 != 0 || p == 65535 {
			rtp.Close()
			return nil, fmt.Errorf("odd port %d", p)
		}
		rtcp, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip, Port: p + 1})
		if err != nil {
			rtp.Close()
			return nil, err
		}
		rtp.SetReadBuffer(rtsp.UDPReadBuffer)
		rtcp.SetReadBuffer(rtsp.UDPReadBuffer)
		return &udpPair{rtp: rtp, rtcp: rtcp}, nil
	}
	var lastErr error
	if ports[0] == 0 {
		for i := 0; i < 32; i++ {
			// Random even ports in the dynamic range, as the system would
			// not give pairs.
			p, err := try(49152 + 2*rand.IntN(8000))
			if err == nil {
				return p, nil
			}
			lastErr = err
		}
		return nil, fmt.Errorf("rtsp: no free UDP port pair: %w", lastErr)
	}
	first := ports[0] + ports[0]%2
	n := (ports[1] - first + 1) / 2
	if n <= 0 {
		return nil, fmt.Errorf("rtsp: UDP range %v holds no even pair", ports)
	}
	start := rand.IntN(n)
	for i := 0; i < n; i++ {
		p, err := try(first + 2*((start+i)%n))
		if err == nil {
			return p, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("rtsp: no free UDP port pair in %v: %w", ports, lastErr)
}

func (p *udpPair) ports() [2]int {
	return [2]int{p.rtp.LocalAddr().(*net.UDPAddr).Port, p.rtcp.LocalAddr().(*net.UDPAddr).Port}
}

func (p *udpPair) close() {
	p.rtp.Close()
	p.rtcp.Close()
}
