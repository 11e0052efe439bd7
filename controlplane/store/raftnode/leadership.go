package raftnode

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"
)

// Leadership tells background workers whether this node is the ready leader:
// it holds leadership and has applied every entry of earlier terms.
type Leadership struct {
	n       *Node
	mu      sync.Mutex
	leader  bool
	changed chan struct{}
	done    chan struct{}
	wg      sync.WaitGroup
}

func newLeadership(n *Node) *Leadership {
	l := &Leadership{n: n, changed: make(chan struct{}), done: make(chan struct{})}
	l.wg.Add(1)
	go l.loop()
	return l
}

func (l *Leadership) loop() {
	defer l.wg.Done()
	for {
		select {
		case <-l.done:
			l.set(false)
			return
		case isLeader := <-l.n.raft.LeaderCh():
			// Readiness belongs to one term: drop it first, because a lost
			// and regained leadership may arrive as two true signals.
			l.set(false)
			if !isLeader {
				continue
			}
			// Apply everything committed by earlier leaders before serving
			// linearizable reads or starting leader-only work.
			for l.n.raft.State() == raft.Leader {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := l.n.await(ctx, l.n.raft.Barrier(5*time.Second))
				cancel()
				if err == nil {
					l.set(true)
					break
				}
				l.n.log.Warn("leader barrier failed", zap.Error(err))
				select {
				case <-l.done:
					l.set(false)
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}
}

func (l *Leadership) set(v bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.leader == v {
		return
	}
	l.leader = v
	close(l.changed)
	l.changed = make(chan struct{})
	l.n.log.Info("leadership changed", zap.Bool("leader", v))
}

func (l *Leadership) stop() {
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	l.wg.Wait()
}

// IsLeader reports whether this node is the ready leader now.
func (l *Leadership) IsLeader() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leader && l.n.raft.State() == raft.Leader
}

// Changed returns a channel closed at the next leadership change.
func (l *Leadership) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

func (l *Leadership) awaitReady(ctx context.Context) error {
	for {
		ch := l.Changed()
		if l.IsLeader() {
			return nil
		}
		if l.n.raft.State() != raft.Leader {
			return raft.ErrNotLeader
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Run calls fn each time this node becomes the ready leader, with a context
// that is cancelled as soon as leadership is lost or ctx ends, and returns
// when ctx ends and fn has returned.
func (l *Leadership) Run(ctx context.Context, fn func(ctx context.Context)) {
	for {
		ch := l.Changed()
		if !l.IsLeader() {
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return
			}
		}
		lctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			fn(lctx)
		}()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		cancel()
		<-done
		if ctx.Err() != nil {
			return
		}
	}
}
