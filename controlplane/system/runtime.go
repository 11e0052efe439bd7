package system

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"time"
)

// Diagnostics are the Go runtime, raft and store figures of this node.
type Diagnostics struct {
	NodeID      string
	GeneratedAt time.Time
	GoVersion   string
	GOMAXPROCS  int
	Goroutines  int
	// OpenFileDescriptors is -1 where /proc is not there to count them.
	OpenFileDescriptors int
	Memory              MemoryFigures
	Raft                RaftFigures
	Store               StoreFigures
}

// MemoryFigures are the Go heap and collector figures.
type MemoryFigures struct {
	HeapAllocBytes, HeapSysBytes, SysBytes uint64
	NumGC                                  uint32
	GCPauseTotal                           time.Duration
	GCPercent                              int
}

// RaftFigures are this node's raft state.
type RaftFigures struct {
	State                                         string
	Term, LastLogIndex, CommitIndex, AppliedIndex uint64
	LastSnapshotIndex                             int64
	LeaderID                                      string
	NumPeers                                      int
	// LastContact is the time since the leader was last heard (0 on the
	// leader, or before any contact).
	LastContact time.Duration
}

// StoreFigures are the replicated store's revision, size and watchers.
type StoreFigures struct {
	Revision, CompactedRevision     int64
	DatabaseSizeBytes, WALSizeBytes int64
	Watchers                        int
}

// PortStatus is one port of this node's modules and whether it is really
// listening.
type PortStatus struct {
	Module    string
	Protocol  string // tcp or udp
	Host      string
	Port      int
	PortEnd   int
	Enabled   bool
	Listening bool
	Message   string
}

// Diagnostics reports the Go runtime, raft and store figures of this node.
func (s *Service) Diagnostics() Diagnostics {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fds := -1
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		fds = len(ents)
	}
	gc := 100
	if v, err := strconv.Atoi(os.Getenv("GOGC")); err == nil {
		gc = v
	}
	n := s.d.Node
	stats := n.Raft().Stats()
	num := func(k string) int64 { v, _ := strconv.ParseInt(stats[k], 10, 64); return v }
	_, leaderID := n.Raft().LeaderWithID()
	var lastContact time.Duration
	if lc := n.Raft().LastContact(); !lc.IsZero() {
		lastContact = time.Since(lc)
	}
	dbSize, walSize := n.State().FileSizes()
	return Diagnostics{
		NodeID: s.d.NodeID, GeneratedAt: time.Now().UTC(), GoVersion: runtime.Version(),
		GOMAXPROCS: runtime.GOMAXPROCS(0), Goroutines: runtime.NumGoroutine(), OpenFileDescriptors: fds,
		Memory: MemoryFigures{HeapAllocBytes: ms.HeapAlloc, HeapSysBytes: ms.HeapSys, SysBytes: ms.Sys,
			NumGC: ms.NumGC, GCPauseTotal: time.Duration(ms.PauseTotalNs), GCPercent: gc},
		Raft: RaftFigures{State: n.Raft().State().String(), Term: n.Raft().CurrentTerm(),
			LastLogIndex: n.Raft().LastIndex(), CommitIndex: n.Raft().CommitIndex(), AppliedIndex: n.State().AppliedIndex(),
			LastSnapshotIndex: num("last_snapshot_index"), LeaderID: string(leaderID), NumPeers: int(num("num_peers")), LastContact: lastContact},
		Store: StoreFigures{Revision: n.Revision(), CompactedRevision: n.State().CompactRevision(),
			DatabaseSizeBytes: dbSize, WALSizeBytes: walSize, Watchers: int(n.State().Watchers())},
	}
}

// Ports lists the ports of this node's modules and probes whether each is
// really listening.
func (s *Service) Ports() []PortStatus {
	out := []PortStatus{}
	for _, p := range s.d.Ports {
		host, portStr, _ := net.SplitHostPort(p.Address)
		port, _ := strconv.Atoi(portStr)
		row := PortStatus{Module: p.Module, Protocol: p.Protocol, Host: host, Port: port, PortEnd: max(p.PortEnd, port), Enabled: p.Enabled}
		row.Listening, row.Message = probe(p.Protocol, host, port)
		if !p.Enabled {
			row.Message = "module not enabled on this node; " + row.Message
		}
		out = append(out, row)
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
