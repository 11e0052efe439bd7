package rtspclient

import (
	"fmt"
	"time"

	"go.uber.org/zap"
)

// TransportMode chooses how a client receives RTP.
type TransportMode string

const (
	// TransportAuto tries UDP first and falls back to TCP when the server
	// refuses UDP (461) or nothing arrives over UDP in time.
	TransportAuto TransportMode = "auto"
	TransportUDP  TransportMode = "udp"
	TransportTCP  TransportMode = "tcp"
)

// Config configures a Client. Zero values take the defaults.
type Config struct {
	Transport TransportMode // default TransportAuto
	// UDPPorts is the range [first, last] RTP/RTCP port pairs are taken
	// from; zero lets the system choose.
	UDPPorts [2]int
	// UDPTimeout is how long UDP may stay silent after PLAY before the
	// client gives up on it (default 3 s).
	UDPTimeout time.Duration
	// ReadTimeout ends a session when no media arrives for this long, and
	// bounds each request's answer (default 10 s).
	ReadTimeout time.Duration
	// DialTimeout bounds the TCP connect (default 5 s).
	DialTimeout time.Duration
	UserAgent   string
	// AllowBasicAuth lets the client answer a Basic challenge, which sends
	// the password in clear over plain rtsp://. Off, a server that offers
	// only Basic gets no credentials and the attempt fails with
	// ErrBasicRefused; Digest is always answered.
	AllowBasicAuth bool
	Log            *zap.Logger
}

func (c *Config) setDefaults() error {
	switch c.Transport {
	case "":
		c.Transport = TransportAuto
	case TransportAuto, TransportUDP, TransportTCP:
	default:
		return fmt.Errorf("rtsp: Transport %q is not auto, udp or tcp", c.Transport)
	}
	if c.UDPPorts[0] < 0 || c.UDPPorts[1] > 65535 || c.UDPPorts[0] > c.UDPPorts[1] || (c.UDPPorts[0] != 0 && c.UDPPorts[1]-c.UDPPorts[0] < 1) {
		return fmt.Errorf("rtsp: UDPPorts %v is not a range of at least two ports", c.UDPPorts)
	}
	if c.UDPTimeout <= 0 {
		c.UDPTimeout = 3 * time.Second
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = 10 * time.Second
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = 5 * time.Second
	}
	if c.UserAgent == "" {
		c.UserAgent = "svc"
	}
	if c.Log == nil {
		c.Log = zap.NewNop()
	}
	return nil
}
