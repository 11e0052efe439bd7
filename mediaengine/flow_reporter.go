package mediaengine

import (
	"context"
	"sync"
	"time"

	"github.com/svcplatform/svc/mediaengine/player"
	"github.com/svcplatform/svc/shared/engineapi"
)

// flowReporter sends on_flow_report and on_server_keepalive. Players that
// left are collected and reported within a second in batches, and every
// flowReportInterval the players still playing are reported, so a mass
// disconnect costs a few hook calls, not one per player.
type flowReporter struct {
	e *Engine

	mu   sync.Mutex
	gone []engineapi.PlayerFlow
}

func newFlowReporter(e *Engine) *flowReporter { return &flowReporter{e: e} }

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
	gone := f.gone
	f.gone = nil
	f.mu.Unlock()
	f.send(gone)
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
	f.send(flows)
}

func (f *flowReporter) send(flows []engineapi.PlayerFlow) {
	hc := f.e.hooks.Load()
	for len(flows) > 0 {
		n := min(len(flows), engineapi.FlowReportBatch)
		hc.FlowReport(engineapi.FlowReportHook{Players: flows[:n]})
		flows = flows[n:]
	}
}
