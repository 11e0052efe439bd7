package recorder

import (
	"container/list"
	"os"
	"sync"
	"time"
)

// indexCacheFiles bounds the parsed sidecars Lookup keeps. A 10-minute
// file with 1 s parts parses to about 40 KB, so the cache stays under a
// few MB while a player seeking back and forth in the files of the last
// hours never re-reads a sidecar.
const indexCacheFiles = 128

// indexCache keeps the parsed sidecars of finished files, least recently
// used first out. An entry is valid while the sidecar's path, size and
// modification time are those it was read with (appending the reported
// line or Repair's rewrite changes them); the recorder also drops an
// entry whenever it removes, moves or repairs the file, so a file gone
// from the disk is never answered from memory.
type indexCache struct {
	mu    sync.Mutex
	limit int
	order *list.List // of *cachedIndex, most recent first
	byID  map[string]*list.Element
}

type cachedIndex struct {
	id, sidecar string
	size        int64
	mod         time.Time
	x           *Index
}

func newIndexCache(limit int) *indexCache {
	return &indexCache{limit: limit, order: list.New(), byID: map[string]*list.Element{}}
}

// get answers the cached index of id when its sidecar is still the one
// st describes.
func (c *indexCache) get(id, sidecar string, st os.FileInfo) (*Index, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byID[id]
	if !ok {
		return nil, false
	}
	ci := e.Value.(*cachedIndex)
	if ci.sidecar != sidecar || ci.size != st.Size() || !ci.mod.Equal(st.ModTime()) {
		c.order.Remove(e)
		delete(c.byID, id)
		return nil, false
	}
	c.order.MoveToFront(e)
	return ci.x, true
}

// put keeps x, read from a sidecar st described before it was read (a
// change while it was read makes the next get miss, never a stale hit).
func (c *indexCache) put(id, sidecar string, st os.FileInfo, x *Index) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[id]; ok {
		c.order.Remove(e)
	}
	c.byID[id] = c.order.PushFront(&cachedIndex{id: id, sidecar: sidecar, size: st.Size(), mod: st.ModTime(), x: x})
	for c.order.Len() > c.limit {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.byID, old.Value.(*cachedIndex).id)
	}
}

// drop forgets id (its file was removed, moved or repaired).
func (c *indexCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[id]; ok {
		c.order.Remove(e)
		delete(c.byID, id)
	}
}

// len is the number of cached sidecars.
func (c *indexCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
