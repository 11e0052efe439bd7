// Package revcache remembers values read from the store for exactly one
// revision: an entry is used only while the revision it was read at has
// not moved, so a committed change makes every entry stale at once, and
// between changes a hot lookup costs no database read. The revision is the
// store's, or better the area revision of the keys the values come from
// (sqlitefsm.State.AreaRevision), so that only a change that can matter (a
// revocation, a role change, a lease renewal) empties the cache. Take the
// revision before reading the value: an entry is then never older than
// the revision it is kept under.
package revcache

import "sync"

// Cache maps keys to values read at one revision. The zero value is ready.
type Cache[V any] struct {
	mu      sync.RWMutex
	rev     int64
	entries map[string]V
	// Max bounds the entries; 0 means 10,000.
	Max int
}

// Get returns the value cached for key at revision rev.
func (c *Cache[V]) Get(key string, rev int64) (V, bool) {
	var zero V
	if c == nil || rev < 0 {
		return zero, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.rev != rev {
		return zero, false
	}
	v, ok := c.entries[key]
	return v, ok
}

// Put stores v for key as read at revision rev; a newer revision empties
// the cache first.
func (c *Cache[V]) Put(key string, rev int64, v V) {
	if c == nil || rev < 0 {
		return
	}
	limit := c.Max
	if limit <= 0 {
		limit = 10000
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rev != rev || c.entries == nil || len(c.entries) >= limit {
		c.rev, c.entries = rev, map[string]V{}
	}
	c.entries[key] = v
}
