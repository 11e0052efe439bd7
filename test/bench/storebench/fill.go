package main

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// fillResult is the data directory of one system after a fixed number of
// puts: what it occupies on disk (allocated blocks, so preallocated log
// segments count) and what its files say they hold.
type fillResult struct {
	Case            string
	Puts            int64
	Took            time.Duration
	Allocated, Size int64
	// Parts is the allocated size of each top-level part of the data
	// directory, two levels deep (raft/wal, member/snap, state.db, ...).
	Parts  map[string]int64
	Failed string
}

// fillWriters is the concurrency of the fill; the keys are those of the
// 64-writer runs, so 64,000 distinct keys each written about 1.6 times
// for 100,000 puts.
const fillWriters = 64

// runFill writes puts puts to a fresh system and measures its data
// directory while it still runs.
func runFill(ctx context.Context, c string, puts int64) fillResult {
	res := fillResult{Case: c, Puts: puts}
	var t target
	var dir string
	switch c {
	case "single":
		st, err := startStore(1)
		if err != nil {
			res.Failed = err.Error()
			return res
		}
		t, dir = st, filepath.Join(st.dir, "n1")
	case "etcd":
		et, err := startEtcd(ctx)
		if err != nil {
			res.Failed = err.Error()
			return res
		}
		t, dir = et, filepath.Join(et.dir, "data")
	default:
		res.Failed = "no fill for " + c
		return res
	}
	defer t.close()
	var next atomic.Int64
	var failed atomic.Value
	start := time.Now()
	var wg sync.WaitGroup
	for w := range fillWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= puts {
					return
				}
				key := fmt.Sprintf("/bench/%d/%d", w, (i/fillWriters)%keysPerWrt)
				octx, cancel := context.WithTimeout(ctx, opTimeout)
				err := t.put(octx, key)
				cancel()
				if err != nil {
					failed.CompareAndSwap(nil, err.Error())
					return
				}
			}
		}()
	}
	wg.Wait()
	res.Took = time.Since(start)
	if f, ok := failed.Load().(string); ok {
		res.Failed = f
		return res
	}
	res.Allocated, res.Size = diskUsage(dir)
	res.Parts = partsUsage(dir)
	return res
}

// partsUsage sums allocated blocks per path prefix of at most two elements
// under dir, with the database's -wal and -shm files counted apart.
func partsUsage(dir string) map[string]int64 {
	parts := map[string]int64{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		elems := strings.Split(rel, string(filepath.Separator))
		if len(elems) > 2 {
			elems = elems[:2]
		}
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				parts[strings.Join(elems, "/")] += st.Blocks * 512
			}
		}
		return nil
	})
	return parts
}

// diskUsage sums the allocated blocks and the sizes of the files under dir.
func diskUsage(dir string) (allocated, size int64) {
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		size += fi.Size()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			allocated += st.Blocks * 512
		}
		return nil
	})
	return allocated, size
}
