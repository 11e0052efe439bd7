package httpmedia

import (
	"errors"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/svcplatform/svc/mediaengine/hub"
)

// errStalled ends a player whose socket took nothing for WriteTimeout.
var errStalled = errors.New("httpmedia: the player took no data for the write timeout")

// writeShard writes to its share of the long-lived players. A reader with
// new packets puts its connection on the shard's ready list and wakes the
// shard, which drains every ready connection and writes each with one
// non-blocking writev. Per frame that is one wake-up per shard instead of
// one per player, which is what keeps the engine's cost per delivered byte
// near a bare loop over sockets. A socket that is full keeps its unwritten
// bytes and is retried; meanwhile its hub queue fills and drops, so one
// stalled player never holds up the others.
type writeShard struct {
	srv     *Server
	wake    chan struct{}
	mu      sync.Mutex
	ready   []*liveConn
	spare   []*liveConn
	blocked map[*liveConn]struct{}

	pkts []*hub.Packet
	bufs [][]byte
	iov  []syscall.Iovec
	hdr  [24]byte
}

func newWriteShard(s *Server) *writeShard {
	return &writeShard{srv: s, wake: make(chan struct{}, 1), blocked: map[*liveConn]struct{}{},
		pkts: make([]*hub.Packet, 0, 256), bufs: make([][]byte, 0, 260), iov: make([]syscall.Iovec, 0, 260)}
}

// enqueue marks c ready; readers call it through their notify hook.
func (sh *writeShard) enqueue(c *liveConn) {
	if !c.queued.CompareAndSwap(false, true) {
		return
	}
	sh.mu.Lock()
	sh.ready = append(sh.ready, c)
	sh.mu.Unlock()
	select {
	case sh.wake <- struct{}{}:
	default:
	}
}

// run serves the shard until stop is closed.
func (sh *writeShard) run(stop <-chan struct{}) {
	retry := time.NewTicker(100 * time.Millisecond)
	defer retry.Stop()
	for {
		select {
		case <-stop:
			return
		case <-sh.wake:
		case <-retry.C:
			sh.retryBlocked(true)
			continue
		}
		sh.mu.Lock()
		batch := sh.ready
		sh.ready = sh.spare[:0]
		sh.mu.Unlock()
		for _, c := range batch {
			c.queued.Store(false)
			sh.service(c)
		}
		clear(batch)
		sh.spare = batch[:0]
		sh.retryBlocked(false)
	}
}

func (sh *writeShard) retryBlocked(checkStall bool) {
	now := time.Now()
	for c := range sh.blocked {
		if checkStall && now.Sub(c.lastProgress) > sh.srv.cfg.WriteTimeout {
			sh.finish(c, errStalled)
			continue
		}
		sh.service(c)
	}
}

// service writes what c has queued, after any bytes left from before.
func (sh *writeShard) service(c *liveConn) {
	if c.finished {
		return
	}
	if len(c.pending) > 0 {
		// Finish the bytes left from before first; until the socket takes
		// them, new packets wait in the hub queue, which drops when full.
		if err := c.rd.Err(); err != nil {
			sh.finish(c, err)
			return
		}
		if err := sh.write(c, nil); err != nil {
			sh.finish(c, err)
			return
		}
		if len(c.pending) > 0 {
			return
		}
	}
	pkts, err := c.rd.TryNext(sh.pkts[:0])
	if err != nil {
		sh.finish(c, err)
		return
	}
	if len(pkts) == 0 && len(c.pending) == 0 {
		return
	}
	err = sh.write(c, pkts)
	clear(pkts)
	if err != nil {
		sh.finish(c, err)
	}
}

func (sh *writeShard) write(c *liveConn, pkts []*hub.Packet) error {
	bufs := sh.bufs[:0]
	if len(c.pending) > 0 {
		bufs = append(bufs, c.pending)
	}
	size := 0
	for _, p := range pkts {
		size += len(p.Data)
	}
	if c.chunked && size > 0 {
		h := strconv.AppendInt(sh.hdr[:0], int64(size), 16)
		bufs = append(bufs, append(h, '\r', '\n'))
	}
	for _, p := range pkts {
		bufs = append(bufs, p.Data)
	}
	if c.chunked && size > 0 {
		bufs = append(bufs, crlf)
	}
	total := 0
	for _, b := range bufs {
		total += len(b)
	}
	n, iov, err := writeNow(c.raw, sh.iov, bufs)
	sh.iov = iov
	if err != nil {
		clear(bufs)
		return err
	}
	now := time.Now()
	if n > 0 {
		c.lastProgress = now
		c.p.AddBytes(n)
		sh.srv.bytesOut.Add(uint64(n))
	}
	if n < total {
		// Keep the unwritten tail; the buffers it came from are shared or
		// reused, so it is copied (only slow players pay this).
		rest := make([]byte, 0, total-n)
		skip := n
		for _, b := range bufs {
			if skip >= len(b) {
				skip -= len(b)
				continue
			}
			rest = append(rest, b[skip:]...)
			skip = 0
		}
		c.pending = rest
		sh.blocked[c] = struct{}{}
	} else {
		c.pending = nil
		delete(sh.blocked, c)
		if c.measure {
			for _, p := range pkts { // the oldest live packet waited longest
				if p.Arrived >= c.joined {
					sh.srv.latency.record(sh.srv.hub.Since(p.Arrived))
					break
				}
			}
		}
	}
	clear(bufs)
	sh.bufs = bufs[:0]
	return nil
}

func (sh *writeShard) finish(c *liveConn, err error) {
	if c.finished {
		return
	}
	c.finished = true
	delete(sh.blocked, c)
	c.close(err)
}
