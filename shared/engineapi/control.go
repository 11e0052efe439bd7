package engineapi

import (
	"time"

	"github.com/svcplatform/svc/shared/credurl"
)

// Control API paths on the engine's loopback ControlAddr. Every call carries
// Authorization: Bearer <control secret>; answers are JSON, errors are
// {"code": "...", "message": "..."} with a 4xx/5xx status.
const (
	// PathHealth answers 200 with Health once the engine serves media.
	PathHealth = "/api/v1/health"
	// PathReload re-reads the configuration file (POST); settings that need
	// a restart are reported in the answer, not applied.
	PathReload = "/api/v1/reload"
)

// Health is the engine's answer on PathHealth; the agent's supervisor uses
// it to tell a started engine from one that is merely running.
type Health struct {
	Status        string    `json:"status"` // "ok"
	PID           int       `json:"pid"`
	Version       string    `json:"version"`
	MediaServerID string    `json:"mediaServerId"`
	StartedAt     time.Time `json:"startedAt"`
	Streams       int       `json:"streams"`
	Players       int       `json:"players"`
	// Proxies counts the pull proxies the engine holds.
	Proxies int `json:"proxies"`
}

// The control API beyond health and reload. Paths with {id} take the id in
// the path; filters are query parameters.
const (
	// PathStreams lists streams (GET, StreamList); filters vhost, app,
	// stream.
	PathStreams = "/api/v1/streams"
	// PathStreamClose closes a stream (POST CloseStreamRequest): its
	// publisher is cut and its players are disconnected.
	PathStreamClose = "/api/v1/streams/close"
	// PathPlayers lists players (GET, PlayerList); filters app, stream,
	// protocol, leaseId, ticket.
	PathPlayers = "/api/v1/players"
	// PathPlayersKick disconnects players (POST KickRequest, KickResult).
	PathPlayersKick = "/api/v1/players/kick"
	// PathProxies lists (GET, ProxyList) and adds (POST AddProxyRequest,
	// ProxyInfo) pull proxies.
	PathProxies = "/api/v1/proxies"
	// PathProxy removes one pull proxy (DELETE /api/v1/proxies/{id}).
	PathProxy = "/api/v1/proxies/{id}"
	// PathConfig reads (GET, Config) and replaces (PUT Config,
	// ConfigResult) the engine's configuration.
	PathConfig = "/api/v1/config"
	// PathStats answers engine statistics (GET, Stats).
	PathStats = "/api/v1/stats"
)

// Error codes of the control API.
const (
	CodeUnauthorized   = "unauthorized"
	CodeInvalidBody    = "invalid_body"
	CodeInvalidConfig  = "invalid_config"
	CodeNotFound       = "not_found"
	CodeStreamNotFound = "stream_not_found"
	CodeProxyNotFound  = "proxy_not_found"
	CodeProxyExists    = "proxy_exists"
	CodeUnsupported    = "unsupported_source"
	CodeInternal       = "internal"
)

// Error is the body of every control API error.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// TrackInfo describes one track of a live stream.
type TrackInfo struct {
	ID    int    `json:"id"`
	Kind  string `json:"kind"` // video or audio
	Codec string `json:"codec"`
	// Ready is false while parameter sets are still missing.
	Ready bool `json:"ready"`
	// Video.
	Width  int     `json:"width,omitempty"`
	Height int     `json:"height,omitempty"`
	FPS    float64 `json:"fps,omitempty"`
	// Audio.
	SampleRate int `json:"sampleRate,omitempty"`
	Channels   int `json:"channels,omitempty"`
	// BitrateKbps is measured over the last complete second.
	BitrateKbps float64 `json:"bitrateKbps"`
	Frames      uint64  `json:"frames"`
}

// StreamInfo describes one live stream.
type StreamInfo struct {
	Vhost  string `json:"vhost"`
	App    string `json:"app"`
	Stream string `json:"stream"`
	// Origin is how media arrives: "file", "rtsp-pull", "rtsp-push", ...
	Origin string `json:"origin"`
	// OriginURL is the pull URL or the file, credentials removed.
	OriginURL string `json:"originUrl,omitempty"`
	// OriginAddr is the publisher's remote address for pushed streams.
	OriginAddr string      `json:"originAddr,omitempty"`
	Tracks     []TrackInfo `json:"tracks"`
	// Ready is set once the stream can be played (every track complete
	// and a keyframe seen): the moment on_stream_changed reports it.
	Ready       bool      `json:"ready"`
	Readers     int       `json:"readers"`
	BytesIn     uint64    `json:"bytesIn"`
	BitrateKbps float64   `json:"bitrateKbps"`
	StartedAt   time.Time `json:"startedAt"`
	UptimeSec   float64   `json:"uptimeSec"`
}

// StreamList is the answer of PathStreams.
type StreamList struct {
	Streams []StreamInfo `json:"streams"`
}

// CloseStreamRequest names the stream PathStreamClose closes.
type CloseStreamRequest struct {
	Vhost  string `json:"vhost,omitempty"`
	App    string `json:"app"`
	Stream string `json:"stream"`
}

// PlayerInfo describes one connected player.
type PlayerInfo struct {
	ID     string `json:"id"`
	Vhost  string `json:"vhost"`
	App    string `json:"app"`
	Stream string `json:"stream"`
	// Protocol is "http-flv", "http-fmp4", "hls", "rtsp" or "webrtc".
	Protocol   string `json:"protocol"`
	RemoteAddr string `json:"remoteAddr"`
	// Ticket is the svc_ticket query parameter the player connected with,
	// Viewer the HLS svc_viewer, LeaseID the lease on_play said the ticket
	// belongs to.
	Ticket    string    `json:"ticket,omitempty"`
	Viewer    string    `json:"viewer,omitempty"`
	LeaseID   string    `json:"leaseId,omitempty"`
	Bytes     uint64    `json:"bytes"`
	Frames    uint64    `json:"frames"`
	Dropped   uint64    `json:"droppedFrames"`
	StartedAt time.Time `json:"startedAt"`
}

// PlayerList is the answer of PathPlayers.
type PlayerList struct {
	Players []PlayerInfo `json:"players"`
}

// KickRequest selects the players to disconnect; at least one field is
// set, and a player must match every field that is.
type KickRequest struct {
	PlayerID string `json:"playerId,omitempty"`
	LeaseID  string `json:"leaseId,omitempty"`
	Ticket   string `json:"ticket,omitempty"`
	App      string `json:"app,omitempty"`
	Stream   string `json:"stream,omitempty"`
}

// KickResult counts the players disconnected.
type KickResult struct {
	Kicked int `json:"kicked"`
}

// RetryPolicy says how a pull proxy reconnects: the first retry after
// InitialBackoff, doubling up to MaxBackoff; MaxAttempts consecutive
// failures (0 = unlimited) give up, and the proxy is reported "failed".
type RetryPolicy struct {
	MaxAttempts    int      `json:"maxAttempts"`
	InitialBackoff Duration `json:"initialBackoff"`
	MaxBackoff     Duration `json:"maxBackoff"`
}

// AddProxyRequest starts pulling URL into the stream App/Stream.
type AddProxyRequest struct {
	// ID is chosen by the caller (idempotency): adding an ID that exists
	// with the same URL and path answers the existing proxy.
	ID     string `json:"id"`
	URL    string `json:"url"`
	Vhost  string `json:"vhost,omitempty"`
	App    string `json:"app"`
	Stream string `json:"stream"`
	// Transport is "tcp", "udp", or "auto" (or empty) for automatic, for RTSP sources.
	Transport string      `json:"transport,omitempty"`
	Retry     RetryPolicy `json:"retry"`
	// AllowBasicAuth lets an RTSP source's Basic challenge be answered,
	// which sends the password in clear over plain rtsp:// (the channel's
	// allowBasicAuthOverPlainRtsp); off, only Digest is answered.
	AllowBasicAuth bool `json:"allowBasicAuth,omitempty"`
}

// ProxyInfo describes one pull proxy.
type ProxyInfo struct {
	ID     string `json:"id"`
	URL    string `json:"url"` // credentials removed
	Vhost  string `json:"vhost"`
	App    string `json:"app"`
	Stream string `json:"stream"`
	// State is "connecting", "live", "retrying", "failed".
	State     string      `json:"state"`
	LastError string      `json:"lastError,omitempty"`
	Attempts  int         `json:"attempts"`
	Retry     RetryPolicy `json:"retry"`
	CreatedAt time.Time   `json:"createdAt"`
	LiveSince *time.Time  `json:"liveSince,omitempty"`
}

// ProxyList is the answer of GET PathProxies.
type ProxyList struct {
	Proxies []ProxyInfo `json:"proxies"`
}

// ConfigResult answers a PUT of PathConfig: the new configuration is
// written to the file and what can change at run time is applied; the
// fields listed in RestartRequired take effect at the next start.
type ConfigResult struct {
	Applied         bool     `json:"applied"`
	RestartRequired []string `json:"restartRequired,omitempty"`
}

// Latency summarises a latency distribution in milliseconds.
type Latency struct {
	Count uint64  `json:"count"`
	P50Ms float64 `json:"p50Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
}

// Stats is the engine's statistics (PathStats).
type Stats struct {
	MediaServerID string  `json:"mediaServerId"`
	UptimeSec     float64 `json:"uptimeSec"`
	Streams       int     `json:"streams"`
	Players       int     `json:"players"`
	Proxies       int     `json:"proxies"`
	BytesIn       uint64  `json:"bytesIn"`
	BytesOut      uint64  `json:"bytesOut"`
	FramesIn      uint64  `json:"framesIn"`
	DroppedFrames uint64  `json:"droppedFrames"`
	Goroutines    int     `json:"goroutines"`
	HeapBytes     uint64  `json:"heapBytes"`
	// FrameToWire is the time from a frame entering the hub to its FLV tag
	// being written to a player's socket.
	FrameToWire Latency `json:"frameToWire"`
	// Hooks counts hook calls by outcome.
	HookCalls    uint64 `json:"hookCalls"`
	HookFailures uint64 `json:"hookFailures"`
}

// RedactURL masks every credential of a URL (userinfo, and user and
// password parameters in the query or the path) for listings and logs.
func RedactURL(raw string) string { return credurl.Redact(raw) }
