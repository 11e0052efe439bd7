package httpapi

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limiter holds one token bucket per key (a client address, a user name),
// for the unauthenticated entry points an attacker can hammer: login,
// refresh and captchas. Buckets live on each control node; the failure
// counters behind the captcha are cluster-wide in the store.
type Limiter struct {
	perMinute float64
	burst     int
	mu        sync.Mutex
	buckets   map[string]*bucket
	now       func() time.Time
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

// maxBuckets bounds the memory an address-spraying client can claim; when it
// is reached, buckets idle for a minute are dropped first.
const maxBuckets = 100_000

// NewLimiter allows perMinute requests per key with bursts of burst.
func NewLimiter(perMinute float64, burst int) *Limiter {
	return &Limiter{perMinute: perMinute, burst: burst, buckets: map[string]*bucket{}, now: time.Now}
}

// Allow takes one token for key; when none is left it reports how long to
// wait.
func (l *Limiter) Allow(key string) (bool, time.Duration) {
	if l == nil || l.perMinute <= 0 {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			for k, v := range l.buckets {
				if now.Sub(v.seen) > time.Minute {
					delete(l.buckets, k)
				}
			}
			if len(l.buckets) >= maxBuckets {
				return false, time.Minute
			}
		}
		b = &bucket{lim: rate.NewLimiter(rate.Limit(l.perMinute/60), l.burst)}
		l.buckets[key] = b
	}
	b.seen = now
	r := b.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// rateLimited is the 429 answer; Retry-After is whole seconds, rounded up.
func rateLimited(wait time.Duration) *Error {
	return &Error{Status: http.StatusTooManyRequests, Code: "rate_limited",
		Message: "too many attempts; wait " + strconv.Itoa(retryAfterSeconds(wait)) + " s", Retryable: retryable(true),
		Details: map[string]string{"retryAfterSeconds": strconv.Itoa(retryAfterSeconds(wait))}}
}

func retryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
