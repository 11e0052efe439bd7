// Package ratelimit holds per-key token buckets for the entry points an
// attacker can hammer without a credential (login, refresh, captchas,
// agent enrollment) and the costly ones a credential can (test e-mails).
// Buckets live on each control node; what must be counted cluster-wide
// (failed logins) is counted in the store by its owner.
package ratelimit

import (
	"net"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limiter holds one token bucket per key (a client address, a user name).
// Keys are created on demand, so a client that sprays keys (user names,
// IPv6 addresses) could fill the table and, at its cap, lock everyone else
// out; each bucket therefore records the client that created it (its
// owner), one owner may hold only a bounded share of the table, and a full
// table drops its least recently used bucket instead of refusing new ones.
type Limiter struct {
	perMinute float64
	burst     int
	mu        sync.Mutex
	buckets   map[string]*bucket
	owners    map[string]int
	now       func() time.Time
}

type bucket struct {
	lim   *rate.Limiter
	seen  time.Time
	owner string
}

const (
	// maxBuckets bounds the memory of one limiter.
	maxBuckets = 100_000
	// maxPerOwner is the share of the table one client may create: a
	// sprayer fills its share and is refused new keys, others are not.
	maxPerOwner = 1_000
)

// New allows perMinute requests per key with bursts of burst; perMinute 0
// allows everything.
func New(perMinute float64, burst int) *Limiter {
	return &Limiter{perMinute: perMinute, burst: burst, buckets: map[string]*bucket{}, owners: map[string]int{}, now: time.Now}
}

// Allow takes one token for key; when none is left it reports how long to
// wait. The key's own client is its owner.
func (l *Limiter) Allow(key string) (bool, time.Duration) { return l.AllowFor(key, key) }

// AllowFor takes one token for key on behalf of owner (the client address
// asking, see ClientKey).
func (l *Limiter) AllowFor(key, owner string) (bool, time.Duration) {
	if l == nil || l.perMinute <= 0 {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		if l.owners[owner] >= maxPerOwner {
			l.dropIdle(now)
			if l.owners[owner] >= maxPerOwner {
				return false, time.Minute
			}
		}
		if len(l.buckets) >= maxBuckets {
			l.dropIdle(now)
			if len(l.buckets) >= maxBuckets {
				l.dropOldest()
			}
		}
		b = &bucket{lim: rate.NewLimiter(rate.Limit(l.perMinute/60), l.burst), owner: owner}
		l.buckets[key] = b
		l.owners[owner]++
	}
	b.seen = now
	r := b.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// dropIdle forgets buckets unused for a minute: they are full again.
func (l *Limiter) dropIdle(now time.Time) {
	for k, b := range l.buckets {
		if now.Sub(b.seen) > time.Minute {
			l.drop(k, b)
		}
	}
}

func (l *Limiter) dropOldest() {
	var oldest string
	var ob *bucket
	for k, b := range l.buckets {
		if ob == nil || b.seen.Before(ob.seen) {
			oldest, ob = k, b
		}
	}
	if ob != nil {
		l.drop(oldest, ob)
	}
}

func (l *Limiter) drop(k string, b *bucket) {
	delete(l.buckets, k)
	if l.owners[b.owner]--; l.owners[b.owner] <= 0 {
		delete(l.owners, b.owner)
	}
}

// ClientKey is the key of a client address: the address itself for IPv4,
// its /64 for IPv6, since one host holds a whole /64 and could otherwise
// rotate through it.
func ClientKey(ip string) string {
	p := net.ParseIP(ip)
	if p == nil || p.To4() != nil {
		return ip
	}
	return p.Mask(net.CIDRMask(64, 128)).String() + "/64"
}
