// Package monitoring gives the control node its own heartbeat (the same
// host figures agents send, taken every few seconds and passed to the other
// control nodes) and assembles the cluster's monitoring view: every node's
// latest figures and bucketed history from the in-memory presence, and a
// light snapshot of this process.
package monitoring

import (
	"context"
	"os"
	"runtime"
	"sort"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/buildinfo"
	"github.com/svcplatform/svc/shared/hostmetrics"
)

// Monitor is one control node's monitoring.
type Monitor struct {
	NodeID    string
	Presence  *nodes.Presence
	Sampler   *hostmetrics.Sampler
	Interval  time.Duration
	StartedAt time.Time
	// Broadcast passes a heartbeat to the other control nodes and returns
	// how many it reached.
	Broadcast func(ctx context.Context, nodeID string, hb agentapi.Heartbeat, at time.Time) int
	Log       *zap.Logger
}

// Beat takes this host's figures now, keeps them and passes them on.
func (m *Monitor) Beat(ctx context.Context) (agentapi.Heartbeat, int) {
	host, _ := os.Hostname()
	now := time.Now().UTC()
	hb := agentapi.Heartbeat{AgentVersion: buildinfo.Version, Hostname: host, SentAt: now, Host: m.Sampler.Host(ctx)}
	m.Presence.Record(m.NodeID, hb, now)
	n := 0
	if m.Broadcast != nil {
		n = m.Broadcast(ctx, m.NodeID, hb, now)
	}
	return hb, n
}

// Run beats every Interval until ctx ends.
func (m *Monitor) Run(ctx context.Context) {
	t := time.NewTicker(m.Interval)
	defer t.Stop()
	m.Beat(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.Beat(ctx)
		}
	}
}

// Runtime is a snapshot of this control node's process.
type Runtime struct {
	PID                       int
	StartedAt                 time.Time
	Uptime                    time.Duration
	Goroutines                int
	HeapAlloc, HeapSys, RSS   uint64
	CPUPercent                float64
	OpenFiles                 int
	GCCycles                  uint32
	NumCPU                    int
	GoVersion, ProcessVersion string
}

// LocalRuntime takes the snapshot; CPU is measured since the previous one.
func (m *Monitor) LocalRuntime(ctx context.Context) Runtime {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	pid := os.Getpid()
	rss, cpu, _ := m.Sampler.Process(ctx, pid)
	return Runtime{PID: pid, StartedAt: m.StartedAt, Uptime: time.Since(m.StartedAt), Goroutines: runtime.NumGoroutine(),
		HeapAlloc: ms.HeapAlloc, HeapSys: ms.HeapSys, RSS: rss, CPUPercent: cpu, OpenFiles: hostmetrics.OpenFiles(ctx, pid),
		GCCycles: ms.NumGC, NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(), ProcessVersion: buildinfo.Version}
}

// Kinds of node in the monitoring view.
const (
	KindControl = "control"
	KindMedia   = "media"
)

// NodeView is one node's current state as monitoring shows it.
type NodeView struct {
	NodeID, Kind, Status, Address, Version, MediaServerID string
	Leader                                                bool
	Heartbeat                                             *agentapi.Heartbeat
	ReceivedAt                                            *time.Time
	Record                                                *nodes.Record
}

// Member is a control node as the view needs it.
type Member struct {
	NodeID, Address string
	Leader          bool
}

// View lists the control nodes (online while their own heartbeats arrive
// within ttl) and then the media hosts (status from their records).
func View(p *nodes.Presence, members []Member, recs []*nodes.Record, ttl time.Duration) []NodeView {
	var out []NodeView
	now := time.Now()
	sort.Slice(members, func(i, j int) bool { return members[i].NodeID < members[j].NodeID })
	for _, m := range members {
		v := NodeView{NodeID: m.NodeID, Kind: KindControl, Status: nodes.StatusOffline, Address: m.Address, Leader: m.Leader}
		if hb, at, ok := p.Last(m.NodeID); ok {
			v.Heartbeat, v.ReceivedAt, v.Version = &hb, &at, hb.AgentVersion
			if now.Sub(at) <= ttl {
				v.Status = nodes.StatusOnline
			}
		}
		out = append(out, v)
	}
	for _, r := range recs {
		v := NodeView{NodeID: r.NodeID, Kind: KindMedia, Status: r.Status, Address: r.Hostname, Version: r.AgentVersion, MediaServerID: r.MediaServerID, Record: r}
		if hb, at, ok := p.Last(r.NodeID); ok {
			v.Heartbeat, v.ReceivedAt = &hb, &at
		}
		out = append(out, v)
	}
	return out
}

// HistoryWindow resolves the contract's history parameters into a window
// and bucket width; ok is false when no history was asked for.
func HistoryWindow(minutes int, start, end *time.Time, bucketSeconds int, now time.Time) (from, to time.Time, bucket time.Duration, ok bool) {
	to = now
	if end != nil {
		to = *end
	}
	switch {
	case start != nil:
		from = *start
	case minutes > 0:
		from = to.Add(-time.Duration(minutes) * time.Minute)
	default:
		return time.Time{}, time.Time{}, 0, false
	}
	if !from.Before(to) {
		return time.Time{}, time.Time{}, 0, false
	}
	bucket = time.Duration(bucketSeconds) * time.Second
	if bucket <= 0 {
		bucket = max(to.Sub(from)/120, 5*time.Second).Truncate(time.Second)
	}
	return from, to, bucket, true
}
