package nodes

import "sync"

// recordCache remembers node records for one store revision: any committed
// write makes every entry stale at once, so a retirement is never served
// from the cache (the same rule as the API token cache).
type recordCache struct {
	mu      sync.RWMutex
	rev     int64
	entries map[string]*Record
}

func (c *recordCache) get(id string, rev int64) (*Record, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.rev != rev || c.entries == nil {
		return nil, false
	}
	r, ok := c.entries[id]
	return r, ok
}

func (c *recordCache) put(id string, rev int64, r *Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rev != rev || c.entries == nil || len(c.entries) > 10000 {
		c.rev, c.entries = rev, map[string]*Record{}
	}
	c.entries[id] = r
}
