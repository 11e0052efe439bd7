package gb28181

import (
	"fmt"
	"time"
)

// Config is the platform's SIP identity and the registrar's limits.
type Config struct {
	// ID is the platform's 20-digit SIP server code (GB/T 28181 annex D).
	ID string
	// Domain is the SIP domain (the first 10 digits of ID by custom); it is
	// the digest realm.
	Domain string
	// Password authenticates every device that has no password of its own.
	Password string
	// ListenAddr is the SIP address served over UDP and TCP ("0.0.0.0:5060").
	ListenAddr string
	// NonceTTL is how long a digest challenge may be answered.
	NonceTTL time.Duration
	// KeepaliveInterval and KeepaliveCount set the offline window of a
	// device that reports none of its own: it is offline once it has been
	// silent for Interval x Count.
	KeepaliveInterval time.Duration
	KeepaliveCount    int
	// CheckInterval is how often presence is checked; default a tenth of
	// the window, at least 100 ms.
	CheckInterval time.Duration
	// CatalogOnRegister asks a device for its catalog when it registers
	// or recovers (default on).
	CatalogOnRegister bool
	// CatalogTimeout is how long a Catalog response may pause between
	// pages before what arrived is synced; default 10 s.
	CatalogTimeout time.Duration
	// MaxRegisterPerSecond bounds the REGISTERs one device may send; a
	// storm beyond it is answered 503 with Retry-After and not processed.
	MaxRegisterPerSecond int
}

// DefaultConfig returns the defaults (GB/T 28181: 60 s keep-alives, three
// missed make a device offline).
func DefaultConfig() Config {
	return Config{ID: "34020000002000000001", Domain: "3402000000", ListenAddr: "0.0.0.0:5060", NonceTTL: 5 * time.Minute,
		KeepaliveInterval: 60 * time.Second, KeepaliveCount: 3, MaxRegisterPerSecond: 10,
		CatalogOnRegister: true}
}

// Validate says which field is wrong.
func (c Config) Validate() error {
	switch {
	case !ValidCode(c.ID):
		return fmt.Errorf("gb28181.id %q: %w", c.ID, ErrDeviceID)
	case c.Domain == "":
		return fmt.Errorf("gb28181.domain is required (the digest realm)")
	case c.Password == "":
		return fmt.Errorf("gb28181.password is required: devices authenticate with digest")
	case c.ListenAddr == "":
		return fmt.Errorf("gb28181.listenAddr is required")
	case c.NonceTTL < time.Second:
		return fmt.Errorf("gb28181.nonceTtl %s is shorter than a second", c.NonceTTL)
	case c.KeepaliveInterval < 100*time.Millisecond || c.KeepaliveCount < 1:
		return fmt.Errorf("gb28181.keepaliveInterval %s x keepaliveCount %d is not a window", c.KeepaliveInterval, c.KeepaliveCount)
	case c.MaxRegisterPerSecond < 1:
		return fmt.Errorf("gb28181.maxRegisterPerSecond must be at least 1")
	}
	return nil
}

// window is how long a device may be silent before it is offline.
func (c Config) window(interval time.Duration, count int) time.Duration {
	if interval <= 0 {
		interval = c.KeepaliveInterval
	}
	if count <= 0 {
		count = c.KeepaliveCount
	}
	return interval * time.Duration(count)
}

// ValidCode reports whether s is a 20-digit GB28181 code.
func ValidCode(s string) bool {
	if len(s) != 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
