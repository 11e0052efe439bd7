// Package gcfloor keeps the Go garbage collector from running while the
// heap is small. With the default GOGC of 100 the collector runs whenever
// the heap has doubled; a control node holds a live heap of a few tens of
// MiB and allocates some MiB a second at a thousand hooks a second, so it
// would collect every second or two. Each cycle takes a quarter of the
// CPUs for its marking and slows the goroutines that allocate during it,
// and on a two-core host most latency outliers of the synchronous paths
// (on_play, API calls) fall inside a cycle. A floor lets the heap grow to a
// fixed size before collecting, and past the floor the collector behaves as
// with GOGC=100: memory stays bounded by max(floor, twice the live heap).
//
// The floor is re-applied after every cycle, from the live heap that cycle
// measured. An operator who sets GOGC in the environment keeps it: the
// floor then does nothing.
package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// minLive stands for the live heap before the first cycle has measured
// it; it is the runtime's own minimum heap goal.
const minLive = 4 << 20

// maxPercent bounds the GOGC the floor sets, whatever the live heap.
const maxPercent = 100000

// Percent is the GOGC that makes the next cycle start when the heap
// reaches floor bytes, given live bytes of live heap; never below 100.
func Percent(floor, live uint64) int {
	live = max(live, minLive)
	if floor <= 2*live {
		return 100
	}
	return int(min((floor-live)*100/live, maxPercent))
}

// Start applies a floor of floor bytes until the returned stop is called;
// stop restores GOGC=100. With floor 0, or GOGC set in the environment, it
// does nothing. Only one floor should be active in a process.
func Start(floor uint64) (stop func()) {
	if _, set := os.LookupEnv("GOGC"); set || floor == 0 {
		return func() {}
	}
	t := &tuner{floor: floor, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.adjust()
	t.arm()
	return func() {
		if t.stopped.CompareAndSwap(false, true) {
			debug.SetGCPercent(100)
		}
	}
}

type tuner struct {
	floor   uint64
	sample  []metrics.Sample
	stopped atomic.Bool
}

// sentinel is allocated for each cycle and dropped at once: its cleanup
// runs after the collection that found it unreachable, which is how the
// tuner learns that a cycle ended. It holds a pointer so that it is not
// packed with other small objects, whose lifetime would delay it.
type sentinel struct{ _ *int }

func (t *tuner) arm() {
	runtime.AddCleanup(&sentinel{}, func(t *tuner) {
		if t.stopped.Load() {
			return
		}
		t.adjust()
		t.arm()
	}, t)
}

// adjust runs on the runtime's cleanup goroutine, one call at a time.
func (t *tuner) adjust() {
	metrics.Read(t.sample)
	var live uint64
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = t.sample[0].Value.Uint64()
	}
	debug.SetGCPercent(Percent(t.floor, live))
}
