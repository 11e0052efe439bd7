package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// opTimeout bounds one operation so a stalled system shows up as errors
// rather than a hung benchmark.
const opTimeout = 10 * time.Second

// target is a system under test.
type target interface {
	// put writes the benchmark value to key in one operation.
	put(ctx context.Context, key string) error
	// serverPID is the process serving the writes when it is not this one.
	serverPID() int
	close() error
}

// benchValue is the value every put writes.
func benchValue() []byte {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	r := rand.New(rand.NewPCG(1, 2))
	v := make([]byte, valueSize)
	for i := range v {
		v[i] = alphabet[r.IntN(len(alphabet))]
	}
	return v
}

// result is one (case, writers) measurement.
type result struct {
	Case     string
	Writers  int
	Ops      int
	Errors   int
	FirstErr string
	Elapsed  time.Duration
	P50, P99 time.Duration
	CPU      cpuUse
	Raft     raftWindow // store cases only
	Failed   string     // the run could not be set up
}

func (r result) putsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// runLoad drives t with writers goroutines for warm + d. Operations that
// complete inside the measured window [start+warm, start+warm+d] count;
// latency is measured around each call.
func runLoad(ctx context.Context, t target, writers int, warm, d time.Duration) result {
	start := time.Now()
	from, to := start.Add(warm), start.Add(warm+d)

	// Preallocate for up to ~100k ops/s in total so appends rarely grow.
	perWriter := int(d.Seconds()*100_000)/writers + 1024
	lat := make([][]time.Duration, writers)
	errs := make([]int, writers)
	firstErr := make([]error, writers)

	type window struct {
		cpu  cpuUse
		raft map[string]sampleStat
	}
	winDone := make(chan window, 1)
	go func() {
		c, r := measureWindow(ctx, from, to, t.serverPID())
		winDone <- window{c, r}
	}()

	var wg sync.WaitGroup
	for w := range writers {
		lat[w] = make([]time.Duration, 0, perWriter)
		keys := make([]string, keysPerWrt)
		for i := range keys {
			keys[i] = fmt.Sprintf("/bench/%d/%d", w, i)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				t0 := time.Now()
				if t0.After(to) {
					return
				}
				octx, cancel := context.WithTimeout(ctx, opTimeout)
				err := t.put(octx, keys[i%keysPerWrt])
				cancel()
				t1 := time.Now()
				in := !t1.Before(from) && !t1.After(to)
				if err != nil {
					if in {
						errs[w]++
						if firstErr[w] == nil {
							firstErr[w] = err
						}
					}
					// Do not spin if the system fails fast.
					time.Sleep(time.Millisecond)
					continue
				}
				if in {
					lat[w] = append(lat[w], t1.Sub(t0))
				}
			}
		}()
	}
	wg.Wait()

	win := <-winDone
	res := result{Writers: writers, Elapsed: d, CPU: win.cpu}
	all := make([]time.Duration, 0, perWriter*writers)
	for w := range writers {
		all = append(all, lat[w]...)
		res.Errors += errs[w]
		if res.FirstErr == "" && firstErr[w] != nil {
			res.FirstErr = firstErr[w].Error()
		}
	}
	res.Ops = len(all)
	slices.Sort(all)
	res.P50 = percentile(all, 0.50)
	res.P99 = percentile(all, 0.99)
	if st, ok := t.(*storeTarget); ok {
		res.Raft = summariseRaft(win.raft, d, len(st.nodes), res.Ops)
	}
	return res
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
