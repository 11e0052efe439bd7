package system

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/svcplatform/svc/api/contract"
)

// Diagnostics reports the Go runtime, raft and store figures of this node.
func (s *Service) Diagnostics() contract.RuntimeDiagnostics {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fds := int32(-1)
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		fds = int32(len(ents))
	}
	gc := int32(100)
	if v, err := strconv.Atoi(os.Getenv("GOGC")); err == nil {
		gc = int32(v)
	}
	n := s.d.Node
	stats := n.Raft().Stats()
	num := func(k string) int64 { v, _ := strconv.ParseInt(stats[k], 10, 64); return v }
	_, leaderID := n.Raft().LeaderWithID()
	var lastContact int64
	if lc := n.Raft().LastContact(); !lc.IsZero() {
		lastContact = time.Since(lc).Milliseconds()
	}
	dbSize, walSize := n.State().FileSizes()
	return contract.RuntimeDiagnostics{
		NodeId: s.d.NodeID, GeneratedAt: time.Now().UTC(), GoVersion: runtime.Version(),
		Gomaxprocs: int32(runtime.GOMAXPROCS(0)), Goroutines: int32(runtime.NumGoroutine()), OpenFileDescriptors: fds,
		Memory: contract.RuntimeMemory{HeapAllocBytes: int64(ms.HeapAlloc), HeapSysBytes: int64(ms.HeapSys), SysBytes: int64(ms.Sys),
			NumGc: int64(ms.NumGC), GcPauseTotalNs: int64(ms.PauseTotalNs), GcPercent: gc},
		Raft: contract.RaftDiagnostics{State: n.Raft().State().String(), Term: int64(n.Raft().CurrentTerm()),
			LastLogIndex: int64(n.Raft().LastIndex()), CommitIndex: int64(n.Raft().CommitIndex()), AppliedIndex: int64(n.State().AppliedIndex()),
			LastSnapshotIndex: num("last_snapshot_index"), LeaderId: string(leaderID), NumPeers: int32(num("num_peers")), LastContactMs: lastContact},
		Store: contract.StoreDiagnostics{Revision: n.Revision(), CompactedRevision: n.State().CompactRevision(),
			DatabaseSizeBytes: dbSize, WalSizeBytes: walSize, Watchers: n.State().Watchers()},
	}
}

// Ports lists the ports of this node's modules and probes whether each is
// really listening.
func (s *Service) Ports() contract.RuntimePortList {
	out := contract.RuntimePortList{NodeId: s.d.NodeID, Rows: []contract.RuntimePort{}}
	for _, p := range s.d.Ports {
		host, portStr, _ := net.SplitHostPort(p.Address)
		port, _ := strconv.Atoi(portStr)
		row := contract.RuntimePort{
			Module:   p.Module,
			Protocol: contract.RuntimePortProtocol(p.Protocol),
			Address:  host,
			Port:     int32(port),
			PortEnd:  int32(max(p.PortEnd, port)),
			Enabled:  p.Enabled,
		}
		row.Listening, row.Message = probe(p.Protocol, host, port)
		if !p.Enabled {
			row.Message = "module not enabled on this node; " + row.Message
		}
		out.Rows = append(out.Rows, row)
	}
	return out
}

func probe(proto, host string, port int) (bool, string) {
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	if proto == "udp" {
		// A UDP port is in use when binding it fails.
		c, err := net.ListenPacket("udp", addr)
		if err != nil {
			return true, "bound by a process"
		}
		c.Close()
		return false, "nothing bound"
	}
	c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
	if err != nil {
		return false, fmt.Sprintf("not accepting connections (%v)", err)
	}
	c.Close()
	return true, "accepting connections"
}
