package recorder

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"
)

// reporter delivers finished files with Report, oldest first, retrying
// with backoff (1 s doubling to 30 s) until each is accepted, and then
// appends the reported line to its sidecar so that a restarted engine
// does not report it again.
type reporter struct {
	root   string
	report func(ctx context.Context, f FileInfo) error
	log    *zap.Logger
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	pending []FileInfo
	wake    chan struct{}
}

func newReporter(root string, report func(context.Context, FileInfo) error, log *zap.Logger) *reporter {
	rp := &reporter{root: root, report: report, log: log, done: make(chan struct{}), wake: make(chan struct{}, 1)}
	rp.ctx, rp.cancel = context.WithCancel(context.Background())
	go rp.run()
	return rp
}

func (rp *reporter) add(f FileInfo) {
	if rp.report == nil {
		return
	}
	rp.mu.Lock()
	rp.pending = append(rp.pending, f)
	rp.mu.Unlock()
	select {
	case rp.wake <- struct{}{}:
	default:
	}
}

// pendingIDs are the ids of the files not yet reported.
func (rp *reporter) pendingIDs() map[string]bool {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	out := make(map[string]bool, len(rp.pending))
	for _, f := range rp.pending {
		out[f.FileID] = true
	}
	return out
}

// Pending is the number of files not yet reported.
func (rp *reporter) Pending() int {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return len(rp.pending)
}

func (rp *reporter) run() {
	defer close(rp.done)
	backoff := time.Second
	for {
		rp.mu.Lock()
		var f FileInfo
		have := len(rp.pending) > 0
		if have {
			f = rp.pending[0]
		}
		rp.mu.Unlock()
		if !have {
			select {
			case <-rp.ctx.Done():
				return
			case <-rp.wake:
				continue
			}
		}
		if err := rp.report(rp.ctx, f); err != nil {
			log := rp.log.Debug
			if backoff == time.Second {
				log = rp.log.Warn // the first failure of a streak
			}
			log("on_record_mp4 not delivered; trying again", zap.String("file", f.Rel), zap.Duration("in", backoff), zap.Error(err))
			select {
			case <-rp.ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 30*time.Second)
			continue
		}
		backoff = time.Second
		rp.markReported(f)
		rp.mu.Lock()
		rp.pending = rp.pending[1:]
		rp.mu.Unlock()
	}
}

func (rp *reporter) markReported(f FileInfo) {
	root := rp.root
	if f.root != "" {
		root = f.root
	}
	idx, err := os.OpenFile(filepath.Join(root, f.Rel)+".idx", os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		err = appendLine(idx, indexLine{T: lineReported})
		if cerr := idx.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		rp.log.Warn("reported file not marked; it will be reported again after a restart", zap.String("file", f.Rel), zap.Error(err))
	}
}

func (rp *reporter) close() {
	rp.cancel()
	<-rp.done
}
