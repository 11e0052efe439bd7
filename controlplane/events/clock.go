package events

import "time"

// Clock is the time source of everything here that schedules work (retry
// backoff, retention, timestamps of deliveries), so tests move time by hand
// instead of sleeping.
type Clock interface {
	Now() time.Time
	// After behaves like time.After on this clock.
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now implements Clock.
func (SystemClock) Now() time.Time { return time.Now() }

// After implements Clock.
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
