package httpmedia

import (
	"sync/atomic"
	"time"

	"github.com/svcplatform/svc/shared/engineapi"
)

const (
	latencyBucket  = 20 * time.Microsecond
	latencyBuckets = 5000 // up to 100 ms; slower lands in the last bucket
)

// latencyHistogram records frame-to-wire times lock-free in 20 µs buckets.
type latencyHistogram struct {
	counts [latencyBuckets]atomic.Uint64
	max    atomic.Int64
}

func (h *latencyHistogram) record(d time.Duration) {
	i := int(d / latencyBucket)
	if i < 0 {
		i = 0
	}
	if i >= latencyBuckets {
		i = latencyBuckets - 1
	}
	h.counts[i].Add(1)
	for {
		m := h.max.Load()
		if int64(d) <= m || h.max.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

// summary reports count, p50, p99 and max.
func (h *latencyHistogram) summary() engineapi.Latency {
	var counts [latencyBuckets]uint64
	var total uint64
	for i := range h.counts {
		counts[i] = h.counts[i].Load()
		total += counts[i]
	}
	out := engineapi.Latency{Count: total, MaxMs: float64(h.max.Load()) / 1e6}
	if total == 0 {
		return out
	}
	pct := func(p float64) float64 {
		want := uint64(p * float64(total))
		var seen uint64
		for i, c := range counts {
			seen += c
			if seen > want {
				return float64(time.Duration(i+1)*latencyBucket) / 1e6
			}
		}
		return out.MaxMs
	}
	out.P50Ms, out.P99Ms = pct(0.50), pct(0.99)
	return out
}
