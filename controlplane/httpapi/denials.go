package httpapi

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/store"
)

// DenialAuditor records permission denials in the audit log without
// putting a consensus round on the denied request's path, and without
// letting a credential that is denied thousands of times a second write
// thousands of records (one token once wrote 17,900 rows, 460 MB, in 10 s).
// Per credential and window the first denial is written as it is; the rest
// are counted and written as one summary record when the window ends.
// Records are written in batches, one transaction per batch; when the
// queue or the table of windows is full, records are dropped and counted.
type DenialAuditor struct {
	store   store.Store
	log     *zap.Logger
	queue   chan audit.Record
	dropped atomic.Int64
	wg      sync.WaitGroup
	// window is how long denials of one credential are summed up.
	window time.Duration

	mu      sync.Mutex
	windows map[string]*denialWindow
	now     func() time.Time
}

// denialWindow is one credential's denials since its first one.
type denialWindow struct {
	opened  time.Time
	last    audit.Record
	more    int
	targets map[string]int
}

const (
	// DefaultDenialWindow sums a credential's denials per minute.
	DefaultDenialWindow = time.Minute
	// maxDenialWindows bounds the credentials summed up at once.
	maxDenialWindows = 10_000
	// maxSummaryTargets is how many distinct targets a summary names.
	maxSummaryTargets = 8
)

// NewDenialAuditor starts the writer, summing denials per credential over
// window (DefaultDenialWindow when 0); it stops when ctx ends, after
// writing what is queued and the summaries of open windows.
func NewDenialAuditor(ctx context.Context, s store.Store, log *zap.Logger, window time.Duration) *DenialAuditor {
	if window <= 0 {
		window = DefaultDenialWindow
	}
	d := &DenialAuditor{store: s, log: log, queue: make(chan audit.Record, 1024), window: window,
		windows: map[string]*denialWindow{}, now: time.Now}
	d.wg.Add(1)
	go d.run(ctx)
	return d
}

// Record notes one denial: the first of its credential in a window is
// queued at once, the others are summed up.
func (d *DenialAuditor) Record(rec audit.Record) {
	if d == nil {
		return
	}
	key := rec.ActorType + ":" + rec.ActorID
	d.mu.Lock()
	w := d.windows[key]
	switch {
	case w != nil:
		w.more++
		w.last = rec
		if _, ok := w.targets[rec.Target]; ok || len(w.targets) < maxSummaryTargets {
			w.targets[rec.Target]++
		}
		d.mu.Unlock()
		return
	case len(d.windows) >= maxDenialWindows:
		d.mu.Unlock()
		d.drop()
		return
	}
	d.windows[key] = &denialWindow{opened: d.now(), last: rec, targets: map[string]int{}}
	d.mu.Unlock()
	d.enqueue(rec)
}

func (d *DenialAuditor) enqueue(rec audit.Record) {
	select {
	case d.queue <- rec:
	default:
		d.drop()
	}
}

func (d *DenialAuditor) drop() {
	if n := d.dropped.Add(1); n%100 == 1 {
		d.log.Warn("audit queue full; permission_denied records dropped", zap.Int64("dropped", n))
	}
}

// Wait returns once the writer has stopped.
func (d *DenialAuditor) Wait() { d.wg.Wait() }

func (d *DenialAuditor) run(ctx context.Context) {
	defer d.wg.Done()
	tick := time.NewTicker(max(d.window/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		var batch []audit.Record
		select {
		case rec := <-d.queue:
			batch = append(batch, rec)
		case <-tick.C:
			batch = d.closeWindows(false)
		case <-ctx.Done():
			d.flush(d.drain(d.closeWindows(true)))
			return
		}
		d.flush(d.drain(batch))
	}
}

// closeWindows ends the windows that are over (all of them with every)
// and returns their summaries.
func (d *DenialAuditor) closeWindows(every bool) []audit.Record {
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []audit.Record
	for key, w := range d.windows {
		if !every && now.Sub(w.opened) < d.window {
			continue
		}
		delete(d.windows, key)
		if w.more > 0 {
			out = append(out, w.summary(now))
		}
	}
	return out
}

// summary is the one record that stands for a window's further denials.
func (w *denialWindow) summary(now time.Time) audit.Record {
	var targets []string
	for t, n := range w.targets {
		targets = append(targets, fmt.Sprintf("%s (%d)", t, n))
	}
	sort.Strings(targets)
	rec := w.last
	rec.OccurredAt = now.UTC()
	rec.Message = fmt.Sprintf("%d more permission denials of this credential from %s to %s; targets: %s",
		w.more, w.opened.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), strings.Join(targets, ", "))
	return rec
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
