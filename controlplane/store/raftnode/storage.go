package raftnode

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"golang.org/x/sys/unix"

	"github.com/svcplatform/svc/controlplane/store"
)

// Sizing of the raft log and of the free-space reserve when the
// configuration leaves them at zero: both follow the size of the data
// directory's filesystem, so a node starts on a 20 MiB volume and does not
// preallocate 64 MiB segments there.
const (
	minSegment   = 1 << 20
	maxSegment   = 64 << 20
	minReserve   = 4 << 20
	maxReserve   = 1 << 30
	segmentShare = 16 // a segment is 1/16 of the filesystem
	reserveShare = 20 // the reserve is 1/20 of the filesystem
	// logMargin is room kept beyond one segment for the raft log itself:
	// the log refuses appends below segment+logMargin free, so the segment
	// rotation an append may trigger always finds its preallocation.
	logMargin = 1 << 20
	// reserveOverLog is how much the write reserve keeps above what the
	// raft log needs, so writes are refused first.
	reserveOverLog = 1 << 20
	// freshFor bounds how old a free-space reading may be when a write is
	// admitted; statfs is cheap, but not free at 10,000 writes a second.
	freshFor = 100 * time.Millisecond
)

// diskStats is the filesystem's size and free space for the unprivileged
// user, which is what SQLite and raft-wal can use.
func diskStats(dir string) (total, free uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return st.Blocks * uint64(st.Bsize), st.Bavail * uint64(st.Bsize), nil
}

// autoSegment is the raft-wal segment size for a filesystem of total bytes.
func autoSegment(total uint64) int {
	s := total / segmentShare
	s -= s % (1 << 20)
	return int(min(max(s, minSegment), maxSegment))
}

// autoReserve is the free-space reserve for a filesystem of total bytes.
func autoReserve(total uint64) uint64 {
	return min(max(total/reserveShare, minReserve), maxReserve)
}

// walLimit bounds the state database's WAL on this volume: 1/16 of it,
// between 4 and 32 MiB, so that on a small volume the WAL does not eat
// the room the reserve keeps.
func (g *storageGuard) walLimit() int64 {
	return int64(min(max(g.total/16, 4<<20), 32<<20))
}

// sizing settles the reserve and the segment size for a filesystem of
// total bytes, zero meaning "from the filesystem's size".
func sizing(total, reserve uint64, segment int) (uint64, int) {
	if reserve == 0 {
		reserve = autoReserve(total)
	}
	if segment == 0 {
		segment = autoSegment(total)
	}
	// Writes must be refused (507) before the raft log refuses to grow:
	// otherwise a leader whose log append fails steps down and the
	// writes fail as "no leader" instead.
	return max(reserve, uint64(segment)+logMargin+reserveOverLog), segment
}

// StorageStatus is what the storage guard last saw.
type StorageStatus struct {
	Dir        string `json:"dir"`
	TotalBytes uint64 `json:"totalBytes"`
	FreeBytes  uint64 `json:"freeBytes"`
	// ReserveBytes is the free space below which writes are refused.
	ReserveBytes uint64 `json:"reserveBytes"`
	// SegmentBytes is the raft log's segment size.
	SegmentBytes int `json:"segmentBytes"`
	// Full is set while writes are refused for lack of space.
	Full bool   `json:"full"`
	Err  string `json:"error,omitempty"`
}

// storageGuard admits writes only while the data directory's filesystem
// keeps its reserve free: a write refused here has not entered the log, so
// the state machine never has to apply an entry it has no room for. The
// reserve is far larger than what the entries already in flight need.
type storageGuard struct {
	dir     string
	reserve uint64
	segment int
	stat    func(dir string) (total, free uint64, err error)

	mu        sync.Mutex
	checkedAt time.Time
	total     uint64
	free      uint64
	err       error
	full      atomic.Bool
}

func newStorageGuard(dir string, reserve uint64, segment int) (*storageGuard, error) {
	g := &storageGuard{dir: dir, stat: diskStats}
	total, free, err := g.stat(dir)
	if err != nil {
		return nil, fmt.Errorf("free space of %s: %w", dir, err)
	}
	g.reserve, g.segment = sizing(total, reserve, segment)
	g.total, g.free, g.checkedAt = total, free, time.Now()
	g.full.Store(free < reserve)
	return g, nil
}

// refresh reads the free space again unless the last reading is fresh.
func (g *storageGuard) refresh(force bool) (free uint64, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if force || time.Since(g.checkedAt) >= freshFor {
		g.total, g.free, g.err = g.stat(g.dir)
		g.checkedAt = time.Now()
		if g.err == nil {
			g.full.Store(g.free < g.reserve)
		}
	}
	return g.free, g.err
}

// admitWrite refuses a new write while free space is below the reserve.
func (g *storageGuard) admitWrite() error {
	free, err := g.refresh(false)
	if err != nil {
		// An unreadable filesystem is not a reason to refuse; SQLite and
		// raft-wal will report what is wrong.
		return nil
	}
	if free < g.reserve {
		return fmt.Errorf("%w: %s has %s free, below the reserve of %s; writes resume when space is freed",
			store.ErrStorageFull, g.dir, mib(free), mib(g.reserve))
	}
	return nil
}

// admitLog refuses a raft log append or tail truncation that might need a
// new segment file while there is no room to preallocate one: raft-wal does
// not retry a failed segment rotation, so letting one fail would stop its
// log until the next restart. Raft retries refused appends.
func (g *storageGuard) admitLog() error {
	free, err := g.refresh(false)
	if err != nil {
		return nil
	}
	if need := uint64(g.segment) + logMargin; free < need {
		return fmt.Errorf("%w: %s has %s free, less than a raft log segment needs (%s)",
			store.ErrStorageFull, g.dir, mib(free), mib(need))
	}
	return nil
}

// Status reports the current reading.
func (g *storageGuard) Status() StorageStatus {
	g.refresh(false)
	g.mu.Lock()
	defer g.mu.Unlock()
	st := StorageStatus{Dir: g.dir, TotalBytes: g.total, FreeBytes: g.free, ReserveBytes: g.reserve, SegmentBytes: g.segment, Full: g.full.Load()}
	if g.err != nil {
		st.Err = g.err.Error()
	}
	return st
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// guardedLog is the raft log behind the storage guard.
type guardedLog struct {
	*wal.WAL
	g *storageGuard
}

var _ raft.MonotonicLogStore = guardedLog{}

func (l guardedLog) StoreLog(log *raft.Log) error { return l.StoreLogs([]*raft.Log{log}) }

func (l guardedLog) StoreLogs(logs []*raft.Log) error {
	if err := l.g.admitLog(); err != nil {
		return err
	}
	return l.WAL.StoreLogs(logs)
}

// DeleteRange guards only tail truncations, which start a new segment;
// dropping the head deletes whole segments and frees space.
func (l guardedLog) DeleteRange(lo, hi uint64) error {
	first, ferr := l.FirstIndex()
	last, lerr := l.LastIndex()
	if ferr == nil && lerr == nil && hi >= last && lo > first {
		if err := l.g.admitLog(); err != nil {
			return err
		}
	}
	return l.WAL.DeleteRange(lo, hi)
}
