package agentapi

import "time"

// Heartbeat is what an agent reports every few seconds. It is not a raft
// write: control nodes keep it in memory; only online/offline transitions
// reach the store.
type Heartbeat struct {
	AgentVersion string      `json:"agentVersion"`
	Hostname     string      `json:"hostname"`
	BootID       string      `json:"bootId"`
	SentAt       time.Time   `json:"sentAt"`
	Host         HostMetrics `json:"host"`
	Engine       EngineState `json:"engine"`
	// CanTune says whether the agent can write kernel parameters (it runs
	// as root with a writable /proc/sys).
	CanTune bool `json:"canTune"`
	// ActiveLeases counts the RTP port leases the agent holds.
	ActiveLeases int `json:"activeLeases"`
}

// HostMetrics are host figures from gopsutil.
type HostMetrics struct {
	CPUPercent    float64            `json:"cpuPercent"`
	CPUCores      int                `json:"cpuCores"`
	MemTotalBytes uint64             `json:"memTotalBytes"`
	MemUsedBytes  uint64             `json:"memUsedBytes"`
	MemPercent    float64            `json:"memPercent"`
	Load1         float64            `json:"load1"`
	Load5         float64            `json:"load5"`
	Load15        float64            `json:"load15"`
	UptimeSeconds uint64             `json:"uptimeSeconds"`
	Disks         []DiskMetrics      `json:"disks"`
	Interfaces    []InterfaceMetrics `json:"interfaces"`
}

// DiskMetrics is one mounted file system.
type DiskMetrics struct {
	Path        string  `json:"path"`
	Device      string  `json:"device"`
	FSType      string  `json:"fsType"`
	TotalBytes  uint64  `json:"totalBytes"`
	UsedBytes   uint64  `json:"usedBytes"`
	FreeBytes   uint64  `json:"freeBytes"`
	UsedPercent float64 `json:"usedPercent"`
}

// InterfaceMetrics is one network interface; rates are over the last
// sampling interval.
type InterfaceMetrics struct {
	Name        string  `json:"name"`
	BytesRecv   uint64  `json:"bytesRecv"`
	BytesSent   uint64  `json:"bytesSent"`
	RecvBps     float64 `json:"recvBitsPerSecond"`
	SentBps     float64 `json:"sentBitsPerSecond"`
	PacketsRecv uint64  `json:"packetsRecv"`
	PacketsSent uint64  `json:"packetsSent"`
	ErrorsIn    uint64  `json:"errorsIn"`
	ErrorsOut   uint64  `json:"errorsOut"`
	DropsIn     uint64  `json:"dropsIn"`
	DropsOut    uint64  `json:"dropsOut"`
}

// Engine process states as the supervisor sees them. Append only.
const (
	EngineStopped     = "stopped"
	EngineStarting    = "starting"
	EngineRunning     = "running"
	EngineCrashed     = "crashed"
	EngineStartFailed = "start_failed"
	EngineBackoff     = "backoff"
)

// EngineState is the supervised engine process as the agent sees it.
type EngineState struct {
	Status        string     `json:"status"`
	PID           int        `json:"pid"`
	MediaServerID string     `json:"mediaServerId"`
	Version       string     `json:"version"`
	StartedAt     *time.Time `json:"startedAt,omitempty"`
	Restarts      int        `json:"restarts"`
	// LastAction is the last managed action (start, stop, restart, reload,
	// auto-restart).
	LastAction string `json:"lastAction"`
	LastError  string `json:"lastError"`
	// NextStartAt is set while the supervisor waits out a backoff.
	NextStartAt *time.Time `json:"nextStartAt,omitempty"`
	RSSBytes    uint64     `json:"rssBytes"`
	CPUPercent  float64    `json:"cpuPercent"`
	Streams     int        `json:"streams"`
	Players     int        `json:"players"`
	// Proxies counts the engine's pull proxies; with Streams it lets the
	// control plane notice that the engine and its own records disagree
	// without asking the engine for its lists.
	Proxies     int    `json:"proxies"`
	ConfigPath  string `json:"configPath"`
	ControlAddr string `json:"controlAddr"`
	HTTPAddr    string `json:"httpAddr"`
	RTSPAddr    string `json:"rtspAddr"`
	RTPPortMin  int    `json:"rtpPortMin"`
	RTPPortMax  int    `json:"rtpPortMax"`
	// SupervisorBootID and TransitionSeq name the last transition reported
	// before this state was taken, so the control plane can tell a state
	// older than a transition it already has.
	SupervisorBootID string `json:"supervisorBootId"`
	TransitionSeq    int64  `json:"transitionSeq"`
}

// Engine transition kinds, reported as they happen. Append only.
const (
	TransitionStarted     = "started"
	TransitionStopped     = "stopped"
	TransitionCrashed     = "crashed"
	TransitionStartFailed = "start_failed"
)

// EngineTransition is one engine process state change. Seq increases per
// agent boot (BootID), so a retried report is applied once.
type EngineTransition struct {
	BootID        string    `json:"bootId"`
	Seq           int64     `json:"seq"`
	Kind          string    `json:"kind"`
	MediaServerID string    `json:"mediaServerId"`
	PID           int       `json:"pid"`
	PreviousPID   int       `json:"previousPid"`
	LastAction    string    `json:"lastAction"`
	Reason        string    `json:"reason"`
	Version       string    `json:"version"`
	At            time.Time `json:"at"`
	// The engine's addresses, from the configuration it started with.
	ControlAddr string `json:"controlAddr,omitempty"`
	HTTPAddr    string `json:"httpAddr,omitempty"`
	RTSPAddr    string `json:"rtspAddr,omitempty"`
	RTPPortMin  int    `json:"rtpPortMin,omitempty"`
	RTPPortMax  int    `json:"rtpPortMax,omitempty"`
}

// HeartbeatResponse tells the agent where the control nodes are, so it can
// fail over when the one it talks to goes away.
type HeartbeatResponse struct {
	ServerURLs []string `json:"serverUrls"`
}

// Bounds of the lists a heartbeat may carry.
const (
	MaxDisks      = 64
	MaxInterfaces = 256
)
