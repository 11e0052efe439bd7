package httpapi

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/store"
)

// DenialAuditor records every permission_denied in the audit log without
// putting a consensus round on the denied request's path: records queue up
// and are written in batches, one transaction per batch. If the queue is
// full (a flood of denied requests) records are dropped and counted, so
// denials can never be used to load the store.
type DenialAuditor struct {
	store   store.Store
	log     *zap.Logger
	queue   chan audit.Record
	dropped atomic.Int64
	wg      sync.WaitGroup
}

// NewDenialAuditor starts the writer; it stops when ctx ends, after
// flushing what is queued.
func NewDenialAuditor(ctx context.Context, s store.Store, log *zap.Logger) *DenialAuditor {
	d := &DenialAuditor{store: s, log: log, queue: make(chan audit.Record, 1024)}
	d.wg.Add(1)
	go d.run(ctx)
	return d
}

// Record queues one denial.
func (d *DenialAuditor) Record(rec audit.Record) {
	if d == nil {
		return
	}
	select {
	case d.queue <- rec:
	default:
		if n := d.dropped.Add(1); n%100 == 1 {
			d.log.Warn("audit queue full; permission_denied records dropped", zap.Int64("dropped", n))
		}
	}
}

// Wait returns once the writer has stopped.
func (d *DenialAuditor) Wait() { d.wg.Wait() }

func (d *DenialAuditor) run(ctx context.Context) {
	defer d.wg.Done()
	for {
		var batch []audit.Record
		select {
		case rec := <-d.queue:
			batch = append(batch, rec)
		case <-ctx.Done():
			d.flush(d.drain(nil))
			return
		}
		d.flush(d.drain(batch))
	}
}

func (d *DenialAuditor) drain(batch []audit.Record) []audit.Record {
	for len(batch) < 256 {
		select {
		case rec := <-d.queue:
			batch = append(batch, rec)
		default:
			return batch
		}
	}
	return batch
}

func (d *DenialAuditor) flush(batch []audit.Record) {
	if len(batch) == 0 {
		return
	}
	var ops []store.Op
	for _, rec := range batch {
		op, err := audit.Op(rec)
		if err != nil {
			continue
		}
		ops = append(ops, op)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := d.store.Txn(ctx, store.TxnRequest{Then: ops}); err != nil {
		d.log.Warn("writing permission_denied audit records failed", zap.Int("records", len(ops)), zap.Error(err))
	}
}
