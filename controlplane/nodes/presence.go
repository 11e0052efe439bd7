package nodes

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/shared/agentapi"
)

// Presence keeps, in memory on every control node, the latest heartbeat of
// each node and a bounded history of its figures. Heartbeats reach every
// control node (the one an agent talks to forwards them to the others), so
// any node serves monitoring, and a new leader already knows who is alive.
type Presence struct {
	// Retention bounds the history kept per node.
	Retention time.Duration

	mu    sync.RWMutex
	nodes map[string]*presenceEntry
}

type presenceEntry struct {
	last       agentapi.Heartbeat
	receivedAt time.Time
	samples    []Sample // oldest first, bounded by Retention
	// pending merges the heartbeats of the current step, so a node keeps
	// at most historyPoints samples whatever its heartbeat interval.
	pending Sample
}

// historyPoints bounds the samples kept per node: the history's resolution
// is Retention/historyPoints (30 s for a day).
const historyPoints = 2880

// Sample is one heartbeat's figures, the unit of monitoring history.
type Sample struct {
	At                time.Time
	CPUPercent        float64
	MemPercent        float64
	MemUsedBytes      uint64
	Load1             float64
	RecvBps, SentBps  float64
	DiskUsedPercent   float64 // the fullest file system
	EngineCPUPercent  float64
	EngineRSSBytes    uint64
	EngineRunning     bool
	EngineStreams     int
	EnginePlayers     int
	ActiveRTPLeases   int
	HeartbeatReceived bool
	// Count is how many heartbeats the sample merges.
	Count int
}

// merge folds s into m: means for rates and loads, maxima for the fullest
// disk, the engine's memory and the counts.
func (m *Sample) merge(s Sample) {
	if s.Count == 0 {
		return
	}
	n := float64(m.Count + s.Count)
	w := float64(s.Count) / n
	mean := func(a, b float64) float64 { return a + (b-a)*w }
	m.CPUPercent = mean(m.CPUPercent, s.CPUPercent)
	m.MemPercent = mean(m.MemPercent, s.MemPercent)
	m.MemUsedBytes = uint64(mean(float64(m.MemUsedBytes), float64(s.MemUsedBytes)))
	m.Load1 = mean(m.Load1, s.Load1)
	m.RecvBps = mean(m.RecvBps, s.RecvBps)
	m.SentBps = mean(m.SentBps, s.SentBps)
	m.EngineCPUPercent = mean(m.EngineCPUPercent, s.EngineCPUPercent)
	m.DiskUsedPercent = max(m.DiskUsedPercent, s.DiskUsedPercent)
	m.EngineRSSBytes = max(m.EngineRSSBytes, s.EngineRSSBytes)
	m.EngineRunning = m.EngineRunning || s.EngineRunning
	m.EngineStreams = max(m.EngineStreams, s.EngineStreams)
	m.EnginePlayers = max(m.EnginePlayers, s.EnginePlayers)
	m.ActiveRTPLeases = max(m.ActiveRTPLeases, s.ActiveRTPLeases)
	m.HeartbeatReceived = m.HeartbeatReceived || s.HeartbeatReceived
	m.Count += s.Count
}

// NewPresence keeps retention of history per node.
func NewPresence(retention time.Duration) *Presence {
	return &Presence{Retention: retention, nodes: map[string]*presenceEntry{}}
}

func sampleOf(hb agentapi.Heartbeat, at time.Time) Sample {
	s := Sample{At: at, CPUPercent: hb.Host.CPUPercent, MemPercent: hb.Host.MemPercent, MemUsedBytes: hb.Host.MemUsedBytes,
		Load1: hb.Host.Load1, EngineCPUPercent: hb.Engine.CPUPercent, EngineRSSBytes: hb.Engine.RSSBytes,
		EngineRunning: hb.Engine.Status == agentapi.EngineRunning, EngineStreams: hb.Engine.Streams, EnginePlayers: hb.Engine.Players,
		ActiveRTPLeases: hb.ActiveLeases, HeartbeatReceived: true, Count: 1}
	for _, i := range hb.Host.Interfaces {
		s.RecvBps += i.RecvBps
		s.SentBps += i.SentBps
	}
	for _, d := range hb.Host.Disks {
		s.DiskUsedPercent = max(s.DiskUsedPercent, d.UsedPercent)
	}
	return s
}

// Record stores a heartbeat received at at.
func (p *Presence) Record(nodeID string, hb agentapi.Heartbeat, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.nodes[nodeID]
	if !ok {
		e = &presenceEntry{}
		p.nodes[nodeID] = e
	}
	e.last, e.receivedAt = hb, at
	step := p.Retention / historyPoints
	if e.pending.Count > 0 && at.Sub(e.pending.At) >= step {
		e.samples = append(e.samples, e.pending)
		e.pending = Sample{}
	}
	if e.pending.Count == 0 {
		e.pending.At = at
	}
	e.pending.merge(sampleOf(hb, at))
	cut := 0
	for cut < len(e.samples) && at.Sub(e.samples[cut].At) > p.Retention {
		cut++
	}
	if cut > 0 {
		e.samples = append(e.samples[:0], e.samples[cut:]...)
	}
}

// Last returns a node's latest heartbeat and when it arrived.
func (p *Presence) Last(nodeID string) (agentapi.Heartbeat, time.Time, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	e, ok := p.nodes[nodeID]
	if !ok {
		return agentapi.Heartbeat{}, time.Time{}, false
	}
	return e.last, e.receivedAt, true
}

// Forget drops a node (retired).
func (p *Presence) Forget(nodeID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.nodes, nodeID)
}

// Bucket is the mean of the samples in [Start, Start+bucket).
type Bucket struct {
	Start   time.Time
	Samples int
	Sample  Sample
}

// History averages a node's samples in [from, to) into buckets of the given
// width; empty buckets are left out.
func (p *Presence) History(nodeID string, from, to time.Time, bucket time.Duration) []Bucket {
	p.mu.RLock()
	defer p.mu.RUnlock()
	e, ok := p.nodes[nodeID]
	if !ok || bucket <= 0 {
		return nil
	}
	var out []Bucket
	for _, s := range append(e.samples[:len(e.samples):len(e.samples)], e.pending) {
		if s.Count == 0 || s.At.Before(from) || !s.At.Before(to) {
			continue
		}
		start := from.Add(s.At.Sub(from) / bucket * bucket)
		if len(out) == 0 || !out[len(out)-1].Start.Equal(start) {
			out = append(out, Bucket{Start: start, Sample: Sample{At: start}})
		}
		b := &out[len(out)-1]
		b.Sample.merge(s)
		b.Samples = b.Sample.Count
	}
	return out
}

// WatchTTL is the leader's check (Nomad style): a node online in the store
// whose last heartbeat is older than ttl goes offline. A node without a
// heartbeat since this leader took over gets ttl from the takeover, so a
// leader change does not take every node offline.
func (s *Service) WatchTTL(ctx context.Context, p *Presence, ttl time.Duration, log *zap.Logger) {
	takeover := time.Now()
	t := time.NewTicker(min(time.Second, ttl/4))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		recs, err := s.List(ctx)
		if err != nil {
			continue
		}
		now := time.Now()
		for _, r := range recs {
			if r.Status != StatusOnline {
				continue
			}
			_, seen, ok := p.Last(r.NodeID)
			if !ok {
				seen = takeover
			}
			if now.Sub(seen) <= ttl {
				continue
			}
			if err := s.MarkOffline(ctx, r.NodeID, seen); err != nil && ctx.Err() == nil {
				log.Warn("marking node offline failed", zap.String("node", r.NodeID), zap.Error(err))
				continue
			}
			log.Warn("node agent missed its heartbeats; marked offline", zap.String("node", r.NodeID), zap.Duration("silentFor", now.Sub(seen)))
		}
	}
}
