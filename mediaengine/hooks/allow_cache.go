package hooks

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/svcplatform/svc/shared/engineapi"
)

// allowCache remembers positive gate answers for a short time, so a player
// that reconnects, or an HLS player fetching its playlist, does not cost a
// round trip each time. Negative answers are never cached: a refused
// ticket may become valid, and a denial is cheap to repeat.
type allowCache struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]cacheEntry
}

type cacheEntry struct {
	ans     engineapi.HookAnswer
	expires time.Time
}

const allowCacheMax = 10000

func cacheKey(hook string, s engineapi.StreamRef, protocol string, params map[string]string) string {
	var b strings.Builder
	b.WriteString(hook + "\x00" + s.Vhost + "\x00" + s.App + "\x00" + s.Stream + "\x00" + protocol)
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString("\x00" + k + "=" + params[k])
	}
	return b.String()
}

func (c *allowCache) get(key string, now time.Time) (engineapi.HookAnswer, bool) {
	if c.ttl <= 0 {
		return engineapi.HookAnswer{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || now.After(e.expires) {
		delete(c.m, key)
		return engineapi.HookAnswer{}, false
	}
	return e.ans, true
}

func (c *allowCache) put(key string, ans engineapi.HookAnswer, now time.Time) {
	ttl := c.ttl
	if ans.CacheSeconds != nil {
		ttl = min(ttl, time.Duration(*ans.CacheSeconds)*time.Second)
	}
	if ttl <= 0 || !ans.Allow {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= allowCacheMax {
		for k, e := range c.m {
			if now.After(e.expires) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= allowCacheMax {
			clear(c.m)
		}
	}
	c.m[key] = cacheEntry{ans: ans, expires: now.Add(ttl)}
}

// forgetLease drops every answer that admitted players of a lease, so a
// revoked lease admits no new player from the cache either.
func (c *allowCache) forgetLease(leaseID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.m {
		if e.ans.LeaseID == leaseID {
			delete(c.m, k)
		}
	}
}
