package testkit

import (
	"sync"
	"time"
)

// Clock is a clock a test moves by hand, for code that takes a
// `Now func() time.Time`: a deadline passes when the test says so, not
// after a sleep that a loaded machine may stretch or a fast one cut short.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock starts a clock at start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
