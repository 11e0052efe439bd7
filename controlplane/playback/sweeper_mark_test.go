package playback

import (
	"testing"
	"time"
)

// TestSweepMarkCovers: the sweeper skips its look only while neither
// area moved, both are known, and nothing it saw has expired.
func TestSweepMarkCovers(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	last := sweepMark{leases: 5, tokens: 7, due: at.Add(time.Minute), ok: true}
	cases := []struct {
		name string
		last sweepMark
		now  sweepMark
		at   time.Time
		want bool
	}{
		{"nothing moved", last, sweepMark{leases: 5, tokens: 7}, at, true},
		{"a lease changed", last, sweepMark{leases: 6, tokens: 7}, at, false},
		{"a token changed", last, sweepMark{leases: 5, tokens: 8}, at, false},
		{"an expiry passed", last, sweepMark{leases: 5, tokens: 7}, at.Add(time.Minute), false},
		{"the last look failed", sweepMark{leases: 5, tokens: 7, due: farFuture}, sweepMark{leases: 5, tokens: 7}, at, false},
		{"no token revision", sweepMark{leases: 5, tokens: -1, due: farFuture, ok: true}, sweepMark{leases: 5, tokens: -1}, at, false},
		{"no lease revision", sweepMark{leases: -1, tokens: 7, due: farFuture, ok: true}, sweepMark{leases: -1, tokens: 7}, at, false},
	}
	for _, c := range cases {
		if got := c.last.covers(c.now, c.at); got != c.want {
			t.Errorf("%s: covers = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestSweepMarkTokensMoved: the tokens are checked again only when a token
// changed or the last look did not check them.
func TestSweepMarkTokensMoved(t *testing.T) {
	last := sweepMark{leases: 5, tokens: 7, due: farFuture, ok: true}
	for _, c := range []struct {
		name string
		last sweepMark
		now  sweepMark
		want bool
	}{
		{"only leases moved", last, sweepMark{leases: 9, tokens: 7}, false},
		{"a token changed", last, sweepMark{leases: 5, tokens: 8}, true},
		{"the last look failed", sweepMark{leases: 5, tokens: 7}, sweepMark{leases: 5, tokens: 7}, true},
		{"no token revision", sweepMark{leases: 5, tokens: -1, ok: true}, sweepMark{leases: 5, tokens: -1}, true},
	} {
		if got := c.last.tokensMoved(c.now); got != c.want {
			t.Errorf("%s: tokensMoved = %v, want %v", c.name, got, c.want)
		}
	}
}
