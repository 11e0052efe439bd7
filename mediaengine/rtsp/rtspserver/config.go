package rtspserver

import (
	"fmt"
	"time"

	"go.uber.org/zap"
)

// Config configures a Server. Zero values take the defaults.
type Config struct {
	// Addr is the TCP listen address (default ":8554").
	Addr string
	// UDPRTPAddr is the UDP address for RTP; RTCP uses the next port.
	// Empty disables UDP transport: SETUP asking for UDP gets 461.
	UDPRTPAddr string
	// Realm of the Digest challenge (default "svc").
	Realm string
	// Credentials looks up a user's password. Nil means no
	// authentication (the Handler may still refuse by query ticket).
	Credentials func(user string) (password string, ok bool)
	// TicketParam, when set with Credentials, lets a player that sends no
	// credentials but carries this query parameter in its DESCRIBE (or
	// SETUP) URL through to the Handler, whose Play decides by the ticket;
	// the rest of that play session follows without credentials. Anything
	// else, publishing above all, still needs Digest.
	TicketParam string
	// DigestAlgorithms are offered in order (default MD5 only: most
	// cameras and players, ffmpeg among them, implement nothing else).
	DigestAlgorithms []string
	// SessionTimeout ends a session that sent nothing (no request, no
	// RTP or RTCP) for this long; it is announced in the Session header
	// (default 60 s).
	SessionTimeout time.Duration
	// MTU is the largest RTP packet sent (default rtpcodec.DefaultMTU).
	MTU int
	// WriteTimeout bounds one write to a player (default 10 s): a player
	// that stops reading is dropped rather than holding its session.
	WriteTimeout time.Duration
	// WriteBatch is how long a TCP player's audio frames may wait to be
	// written together with the next video frame (default 40 ms; negative
	// writes every frame at once, for the lowest audio latency).
	WriteBatch time.Duration
	// MaxConnections bounds the open RTSP connections (default 20000); a
	// connection past it is closed at once, so a flood of idle
	// connections cannot exhaust the process.
	MaxConnections int
	Log            *zap.Logger
}

func (c *Config) setDefaults() error {
	if c.Addr == "" {
		c.Addr = ":8554"
	}
	if c.Realm == "" {
		c.Realm = "svc"
	}
	if len(c.DigestAlgorithms) == 0 {
		c.DigestAlgorithms = []string{"MD5"}
	}
	for _, a := range c.DigestAlgorithms {
		if a != "MD5" && a != "SHA-256" {
			return fmt.Errorf("rtsp: DigestAlgorithms: %q is neither MD5 nor SHA-256", a)
		}
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 60 * time.Second
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = 20000
	}
	if c.WriteBatch == 0 {
		c.WriteBatch = 40 * time.Millisecond
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 10 * time.Second
	}
	if c.Log == nil {
		c.Log = zap.NewNop()
	}
	return nil
}
