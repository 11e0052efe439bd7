package sqlitefsm

import (
	"strings"
	"sync"
)

// An area is a key's first two path segments ("/playback/leases/" of
// "/playback/leases/abc"): the unit of change a cache can watch. A lease
// cache keyed by the leases' area revision survives the hook inbox's and
// the audit log's writes, which a cache keyed by the store revision does
// not.
func area(key string) string {
	if len(key) < 2 || key[0] != '/' {
		return key
	}
	i := strings.IndexByte(key[1:], '/')
	if i < 0 {
		return key
	}
	j := strings.IndexByte(key[i+2:], '/')
	if j < 0 {
		return key
	}
	return key[:i+2+j+1]
}

// maxAreas bounds the areas remembered; beyond it every area counts as
// changed at the latest revision.
const maxAreas = 4096

// areaRevisions records, per area, the revision of its latest applied
// change. floor stands for every area not recorded (the revision the state
// was loaded or restored at).
type areaRevisions struct {
	mu    sync.RWMutex
	floor int64
	last  map[string]int64
}

func (a *areaRevisions) reset(rev int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.floor, a.last = rev, map[string]int64{}
}

func (a *areaRevisions) mark(touched map[string]struct{}, rev int64) {
	if len(touched) == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.last == nil || len(a.last)+len(touched) > maxAreas {
		a.floor, a.last = rev, map[string]int64{}
		return
	}
	for k := range touched {
		a.last[k] = rev
	}
}

func (a *areaRevisions) revision(prefixes []string) int64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	rev := a.floor
	for _, p := range prefixes {
		rev = max(rev, a.last[area(p)])
	}
	return rev
}

// AreaRevision is the revision of the latest applied change to a key in
// the areas of the given prefixes (each names its area by a key or prefix
// in it, such as "/playback/leases/"). It moves only when such a key
// changes, so a value read from those areas and remembered under it stays
// right while it has not moved. It never exceeds Revision.
func (s *State) AreaRevision(prefixes ...string) int64 {
	return s.areas.revision(prefixes)
}
