package hooks

import (
	"testing"
	"time"

	"github.com/svcplatform/svc/shared/engineapi"
)

func TestAllowCacheHonoursTheAnswer(t *testing.T) {
	c := allowCache{ttl: 10 * time.Second, m: map[string]cacheEntry{}}
	now := time.Now()
	zero, two := 0, 2
	c.put("once", engineapi.HookAnswer{Allow: true, CacheSeconds: &zero}, now)
	if _, ok := c.get("once", now); ok {
		t.Fatal("an answer that forbids reuse was cached")
	}
	c.put("short", engineapi.HookAnswer{Allow: true, CacheSeconds: &two, LeaseID: "L1"}, now)
	if _, ok := c.get("short", now.Add(time.Second)); !ok {
		t.Fatal("a 2 s answer was not reused after 1 s")
	}
	if _, ok := c.get("short", now.Add(3*time.Second)); ok {
		t.Fatal("a 2 s answer was reused after 3 s")
	}
	c.put("lease", engineapi.HookAnswer{Allow: true, LeaseID: "L1"}, now)
	c.forgetLease("L1")
	if _, ok := c.get("lease", now); ok {
		t.Fatal("a forgotten lease's answer was reused")
	}
}
