// Package hostmetrics samples a host's figures with gopsutil: CPU, memory,
// load, every real file system and network interface, and one process's
// resident memory and CPU. Node agents send them in heartbeats; control
// nodes take the same figures of their own host, so monitoring covers the
// whole cluster with one vocabulary.
package hostmetrics

import (
	"context"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/disk"
	"github.com/shirou/gopsutil/v4/host"
	"github.com/shirou/gopsutil/v4/load"
	"github.com/shirou/gopsutil/v4/mem"
	"github.com/shirou/gopsutil/v4/net"
	"github.com/shirou/gopsutil/v4/process"

	"github.com/svcplatform/svc/shared/agentapi"
)

// pseudoFS are file systems that hold no data worth watching.
var pseudoFS = map[string]bool{"proc": true, "sysfs": true, "tmpfs": true, "devtmpfs": true, "devpts": true, "cgroup": true, "cgroup2": true,
	"squashfs": true, "securityfs": true, "pstore": true, "debugfs": true, "tracefs": true, "mqueue": true, "hugetlbfs": true,
	"fusectl": true, "configfs": true, "bpf": true, "autofs": true, "binfmt_misc": true, "nsfs": true, "rpc_pipefs": true, "efivarfs": true}

// Sampler keeps what rates need between samples (previous counters, the
// process handles whose CPU is measured since the last call).
type Sampler struct {
	mu      sync.Mutex
	lastNet map[string]net.IOCountersStat
	lastAt  time.Time
	procs   map[int]*process.Process
}

// New makes a sampler; the first sample's rates are zero.
func New() *Sampler {
	s := &Sampler{lastNet: map[string]net.IOCountersStat{}, procs: map[int]*process.Process{}}
	cpu.Percent(0, false) // prime the CPU counter so the first sample has a value
	return s
}

// Host samples the host. A figure gopsutil cannot read stays zero rather
// than failing the whole heartbeat.
func (s *Sampler) Host(ctx context.Context) agentapi.HostMetrics {
	s.mu.Lock()
	defer s.mu.Unlock()
	var m agentapi.HostMetrics
	if p, err := cpu.PercentWithContext(ctx, 0, false); err == nil && len(p) == 1 {
		m.CPUPercent = round2(p[0])
	}
	m.CPUCores = runtime.NumCPU()
	if vm, err := mem.VirtualMemoryWithContext(ctx); err == nil {
		m.MemTotalBytes, m.MemUsedBytes, m.MemPercent = vm.Total, vm.Used, round2(vm.UsedPercent)
	}
	if l, err := load.AvgWithContext(ctx); err == nil {
		m.Load1, m.Load5, m.Load15 = l.Load1, l.Load5, l.Load15
	}
	if up, err := host.UptimeWithContext(ctx); err == nil {
		m.UptimeSeconds = up
	}
	m.Disks = disks(ctx)
	m.Interfaces = s.interfaces(ctx)
	return m
}

func disks(ctx context.Context) []agentapi.DiskMetrics {
	parts, err := disk.PartitionsWithContext(ctx, false)
	if err != nil {
		return []agentapi.DiskMetrics{}
	}
	out := []agentapi.DiskMetrics{}
	seen := map[string]bool{}
	for _, p := range parts {
		if pseudoFS[p.Fstype] || seen[p.Mountpoint] || strings.HasPrefix(p.Mountpoint, "/proc") || strings.HasPrefix(p.Mountpoint, "/sys") {
			continue
		}
		seen[p.Mountpoint] = true
		u, err := disk.UsageWithContext(ctx, p.Mountpoint)
		if err != nil || u.Total == 0 {
			continue
		}
		out = append(out, agentapi.DiskMetrics{Path: p.Mountpoint, Device: p.Device, FSType: p.Fstype, TotalBytes: u.Total,
			UsedBytes: u.Used, FreeBytes: u.Free, UsedPercent: round2(u.UsedPercent)})
		if len(out) == agentapi.MaxDisks {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func (s *Sampler) interfaces(ctx context.Context) []agentapi.InterfaceMetrics {
	counters, err := net.IOCountersWithContext(ctx, true)
	if err != nil {
		return []agentapi.InterfaceMetrics{}
	}
	now := time.Now()
	dt := now.Sub(s.lastAt).Seconds()
	out := []agentapi.InterfaceMetrics{}
	next := map[string]net.IOCountersStat{}
	for _, c := range counters {
		next[c.Name] = c
		im := agentapi.InterfaceMetrics{Name: c.Name, BytesRecv: c.BytesRecv, BytesSent: c.BytesSent, PacketsRecv: c.PacketsRecv,
			PacketsSent: c.PacketsSent, ErrorsIn: c.Errin, ErrorsOut: c.Errout, DropsIn: c.Dropin, DropsOut: c.Dropout}
		if prev, ok := s.lastNet[c.Name]; ok && dt > 0 && c.BytesRecv >= prev.BytesRecv && c.BytesSent >= prev.BytesSent {
			im.RecvBps = round2(float64(c.BytesRecv-prev.BytesRecv) * 8 / dt)
			im.SentBps = round2(float64(c.BytesSent-prev.BytesSent) * 8 / dt)
		}
		out = append(out, im)
		if len(out) == agentapi.MaxInterfaces {
			break
		}
	}
	s.lastNet, s.lastAt = next, now
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Process returns a process's resident memory and its CPU use (percent of
// one core) since the previous call for the same pid.
func (s *Sampler) Process(ctx context.Context, pid int) (rss uint64, cpuPercent float64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pid <= 0 {
		return 0, 0, false
	}
	p, found := s.procs[pid]
	if !found {
		var err error
		if p, err = process.NewProcessWithContext(ctx, int32(pid)); err != nil {
			return 0, 0, false
		}
		// Only the current process of interest is kept.
		s.procs = map[int]*process.Process{pid: p}
		p.PercentWithContext(ctx, 0)
	}
	mi, err := p.MemoryInfoWithContext(ctx)
	if err != nil {
		delete(s.procs, pid)
		return 0, 0, false
	}
	c, _ := p.PercentWithContext(ctx, 0)
	return mi.RSS, round2(c), true
}

// OpenFiles counts a process's open file descriptors (-1 when unknown).
func OpenFiles(ctx context.Context, pid int) int {
	p, err := process.NewProcessWithContext(ctx, int32(pid))
	if err != nil {
		return -1
	}
	n, err := p.NumFDsWithContext(ctx)
	if err != nil {
		return -1
	}
	return int(n)
}

func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }
