package mediaengine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svcplatform/svc/mediaengine/player"
	"github.com/svcplatform/svc/shared/engineapi"
)

// flowReporter sends on_flow_report and on_server_keepalive. Players that
// left are collected and reported within a second in batches, and every
// flowReportInterval the players still playing are reported, so a mass
// disconnect costs a few hook calls, not one per player. WebRTC
// publishers' received bytes are reported the same way.
type flowReporter struct {
	e *Engine

	mu   sync.Mutex
	gone []engineapi.PlayerFlow
	// publishers are the publishers that count their bytes here;
	// gonePublishers those that stopped since the last report.
	publishers     map[*publisherFlow]struct{}
	gonePublishers []engineapi.PublisherFlow
}

// publisherFlow is one publisher's running count.
type publisherFlow struct {
	info  engineapi.PublisherFlow
	bytes atomic.Uint64
}

func (p *publisherFlow) flow(final bool) engineapi.PublisherFlow {
	f := p.info
	f.Bytes, f.DurationSec, f.Final = p.bytes.Load(), time.Since(f.StartedAt).Seconds(), final
	return f
}

func newFlowReporter(e *Engine) *flowReporter {
	return &flowReporter{e: e, publishers: map[*publisherFlow]struct{}{}}
}

// publishing starts a publisher's flow: received counts its bytes, leave
// (once) reports its total.
func (f *flowReporter) publishing(info engineapi.PublisherFlow) (received func(n int), leave func()) {
	p := &publisherFlow{info: info}
	p.info.StartedAt = time.Now()
	f.mu.Lock()
	f.publishers[p] = struct{}{}
	f.mu.Unlock()
	var once sync.Once
	return func(n int) { p.bytes.Add(uint64(n)) }, func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			delete(f.publishers, p)
			if f.e.hooks.Load().Enabled() {
				f.gonePublishers = append(f.gonePublishers, p.flow(true))
			}
		})
	}
}

// left is the player registry's OnLeave.
func (f *flowReporter) left(p *player.Player) {
	if !f.e.hooks.Load().Enabled() {
		return
	}
	flow := engineapi.PlayerFlow{PlayerInfo: p.Info(), DurationSec: time.Since(p.StartedAt).Seconds(), Final: true}
	f.mu.Lock()
	f.gone = append(f.gone, flow)
	f.mu.Unlock()
}

func (f *flowReporter) run(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lastFlow, lastKeepalive time.Time
	for {
		select {
		case <-ctx.Done():
			f.flushGone()
			return
		case now := <-tick.C:
			f.flushGone()
			cfg := f.e.cfg.Load()
			if now.Sub(lastFlow) >= cfg.Hooks.FlowReportInterval.D() {
				lastFlow = now
				f.reportActive()
			}
			if now.Sub(lastKeepalive) >= cfg.Hooks.KeepaliveInterval.D() {
				lastKeepalive = now
				if hc := f.e.hooks.Load(); hc.Enabled() {
					hc.Keepalive(f.e.Stats())
				}
			}
		}
	}
}

func (f *flowReporter) flushGone() {
	f.mu.Lock()
	gone, gonePubs := f.gone, f.gonePublishers
	f.gone, f.gonePublishers = nil, nil
	f.mu.Unlock()
	f.send(gone, gonePubs)
}

func (f *flowReporter) reportActive() {
	hc := f.e.hooks.Load()
	if !hc.Enabled() {
		return
	}
	ps := f.e.players.List(player.Filter{})
	flows := make([]engineapi.PlayerFlow, 0, len(ps))
	for _, p := range ps {
		flows = append(flows, engineapi.PlayerFlow{PlayerInfo: p.Info(), DurationSec: time.Since(p.StartedAt).Seconds()})
	}
	f.mu.Lock()
	pubs := make([]engineapi.PublisherFlow, 0, len(f.publishers))
	for p := range f.publishers {
		pubs = append(pubs, p.flow(false))
	}
	f.mu.Unlock()
	f.send(flows, pubs)
}

// send reports players and publishers, at most FlowReportBatch of each a
// hook.
func (f *flowReporter) send(flows []engineapi.PlayerFlow, pubs []engineapi.PublisherFlow) {
	hc := f.e.hooks.Load()
	for len(flows) > 0 || len(pubs) > 0 {
		n, m := min(len(flows), engineapi.FlowReportBatch), min(len(pubs), engineapi.FlowReportBatch)
		hc.FlowReport(engineapi.FlowReportHook{Players: flows[:n], Publishers: pubs[:m]})
		flows, pubs = flows[n:], pubs[m:]
	}
}
