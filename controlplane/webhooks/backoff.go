package webhooks

import "time"

// Retry timing (contract A, "Limits"): the first retry waits about 5 s,
// each further one twice as long, with jitter so that many deliveries that
// failed together do not return together, never more than 5 minutes.
const (
	BackoffBase = 5 * time.Second
	BackoffCap  = 300 * time.Second
	// Jitter spreads each wait over [1-Jitter, 1+Jitter) of its nominal
	// value.
	Jitter = 0.2
)

// Backoff is the wait after the failed-th consecutive failure (1 for the
// first). u is a uniform random number in [0, 1). A receiver's Retry-After
// is honoured as "not before", within the cap.
func Backoff(failed int, u float64, retryAfter time.Duration) time.Duration {
	d := BackoffBase
	for i := 1; i < failed && d < BackoffCap; i++ {
		d *= 2
	}
	d = min(d, BackoffCap)
	d = time.Duration(float64(d) * (1 - Jitter + 2*Jitter*u))
	d = max(d, retryAfter)
	return min(d, BackoffCap)
}
