package engineapi

import "time"

// RTP servers receive GB28181 program streams on a port the agent leased
// (ZLMediaKit's openRtpServer). The control API opens one per INVITE and
// closes it on BYE; a server that receives nothing for its timeout closes
// itself and reports on_rtp_server_timeout.
const (
	// PathRTPServers lists (GET, RTPServerList) and opens (POST
	// OpenRTPServerRequest, RTPServerInfo) RTP servers.
	PathRTPServers = "/api/v1/rtp-servers"
	// PathRTPServer closes one (DELETE /api/v1/rtp-servers/{id}).
	PathRTPServer = "/api/v1/rtp-servers/{id}"
	// HookOnRTPServerTimeout reports an RTP server closed because no RTP
	// arrived within its timeout (RTPServerTimeoutHook).
	HookOnRTPServerTimeout = "on_rtp_server_timeout"
)

// Codes of the RTP server routes.
const (
	CodeRTPServerExists   = "rtp_server_exists"
	CodeRTPServerNotFound = "rtp_server_not_found"
	CodeRTPPortBusy       = "rtp_port_busy"
)

// RTP transports of OpenRTPServerRequest, as seen from the engine.
const (
	RTPTransportUDP        = "udp"
	RTPTransportTCPPassive = "tcp-passive" // the engine listens, the device connects
	RTPTransportTCPActive  = "tcp-active"  // the engine connects to the device
)

// OpenRTPServerRequest opens an RTP server publishing at Vhost/App/Stream.
type OpenRTPServerRequest struct {
	Vhost  string `json:"vhost,omitempty"`
	App    string `json:"app"`
	Stream string `json:"stream"`
	// Port is the leased port (1024-65535); for tcp-active the local port
	// to dial from, 0 for any.
	Port int `json:"port"`
	// Transport is udp, tcp-passive or tcp-active.
	Transport string `json:"transport"`
	// Peer is the device's media address (host:port) for tcp-active.
	Peer string `json:"peer,omitempty"`
	// SSRC is the INVITE's y= value; 0 accepts the first packet's.
	SSRC uint32 `json:"ssrc"`
	// TimeoutSeconds closes the server when nothing arrives for so long
	// (default 10).
	TimeoutSeconds int `json:"timeoutSeconds,omitempty"`
}

// RTPServerInfo describes an open RTP server.
type RTPServerInfo struct {
	ID        string `json:"id"`
	Vhost     string `json:"vhost"`
	App       string `json:"app"`
	Stream    string `json:"stream"`
	Port      int    `json:"port"`
	Transport string `json:"transport"`
	SSRC      uint32 `json:"ssrc"`
	// Packets and counters of what was dropped.
	Packets     uint64    `json:"packets"`
	Bytes       uint64    `json:"bytes"`
	Frames      uint64    `json:"frames"`
	WrongSSRC   uint64    `json:"wrongSsrc"`
	WrongSource uint64    `json:"wrongSource"`
	Lost        uint64    `json:"lost"`
	Published   bool      `json:"published"`
	StartedAt   time.Time `json:"startedAt"`
}

// RTPServerList is the answer of GET PathRTPServers.
type RTPServerList struct {
	Servers []RTPServerInfo `json:"servers"`
}

// RTPServerTimeoutHook reports an RTP server that timed out
// (on_rtp_server_timeout).
type RTPServerTimeoutHook struct {
	HookHeader
	StreamRef
	ID             string `json:"id"`
	Port           int    `json:"port"`
	SSRC           uint32 `json:"ssrc"`
	TimeoutSeconds int    `json:"timeoutSeconds"`
	// Published says whether media had started before it stopped.
	Published bool `json:"published"`
}
