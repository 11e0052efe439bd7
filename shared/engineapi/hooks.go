package engineapi

import (
	"bytes"
	"time"
)

// Hook names: the engine posts each as JSON to <hooks.url>/<name>. The
// meanings follow ZLMediaKit's hooks of the same names.
const (
	HookOnPublish          = "on_publish"
	HookOnPlay             = "on_play"
	HookOnStreamChanged    = "on_stream_changed"
	HookOnStreamNoneReader = "on_stream_none_reader"
	HookOnFlowReport       = "on_flow_report"
	HookOnServerKeepalive  = "on_server_keepalive"
	// HookOnRTSPAuth asks for the password of an RTSP user the engine's
	// RTSP server must check (Digest); the control plane keeps the
	// credentials sealed and answers over the node's mutual TLS.
	HookOnRTSPAuth = "on_rtsp_auth"
)

// OpensObject reports whether a hook body, after leading white space, opens
// a JSON object. With a decode that succeeds (or json.Valid) the body is
// one; the check keeps out `null`, which decodes into any struct.
func OpensObject(body []byte) bool {
	t := bytes.TrimLeft(body, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// RTSPUserParam is the hook parameter that carries the RTSP user the
// engine's RTSP server authenticated (Digest) for a player or publisher; the
// engine replaces any value a client put in its URL.
const RTSPUserParam = "svc_rtsp_user"

// RTSPAuthHook asks for a user's password (on_rtsp_auth).
type RTSPAuthHook struct {
	HookHeader
	User       string `json:"user"`
	Realm      string `json:"realm"`
	RemoteAddr string `json:"remoteAddr"`
}

// HookHeader is in every hook body: which engine sends it and when.
type HookHeader struct {
	MediaServerID string    `json:"mediaServerId"`
	NodeID        string    `json:"nodeId"`
	SentAt        time.Time `json:"sentAt"`
}

// StreamRef names a stream in hook bodies.
type StreamRef struct {
	Vhost  string `json:"vhost"`
	App    string `json:"app"`
	Stream string `json:"stream"`
}

// PublishHook asks whether a publisher may publish (on_publish). The
// control plane answers with HookAnswer; anything but an answer with
// Allow true within hooks.timeout refuses the publisher.
type PublishHook struct {
	HookHeader
	StreamRef
	// Protocol is how the publisher arrives ("rtsp", "rtsp-pull", ...).
	Protocol   string `json:"protocol"`
	RemoteAddr string `json:"remoteAddr"`
	// Params are the URL query parameters the publisher sent.
	Params map[string]string `json:"params"`
}

// PlayHook asks whether a player may play (on_play); Params carries the
// URL query parameters, svc_ticket among them, which the control plane
// checks against the lease.
type PlayHook struct {
	HookHeader
	StreamRef
	Protocol   string            `json:"protocol"`
	RemoteAddr string            `json:"remoteAddr"`
	Params     map[string]string `json:"params"`
}

// HookAnswer is the control plane's answer to on_publish, on_play and
// on_stream_none_reader.
type HookAnswer struct {
	// Allow admits the publisher or player.
	Allow bool `json:"allow"`
	// Reason says why not; the engine logs it and answers the player 403.
	Reason string `json:"reason,omitempty"`
	// LeaseID, on an on_play answer, is the playback lease the ticket
	// belongs to; the engine tags the player with it so a lease's players
	// can be kicked together.
	LeaseID string `json:"leaseId,omitempty"`
	// Close, on an on_stream_none_reader answer, asks the engine to close
	// the stream (a pull proxy stops pulling).
	Close bool `json:"close,omitempty"`
	// Password, on an on_rtsp_auth answer with Allow true, is the user's
	// password; the engine keeps it only in memory, briefly.
	Password string `json:"password,omitempty"`
	// CacheSeconds, when present, bounds how long the engine may reuse an
	// allowing answer for the same request (never longer than its own
	// hooks.allowCacheTtl); 0 forbids reuse, as a one-time ticket needs.
	CacheSeconds *int `json:"cacheSeconds,omitempty"`
}

// StreamChangedHook reports a stream registered (Registered true, with
// its tracks) or gone (on_stream_changed). ZLMediaKit sends one per
// protocol; Schemas lists the protocols the stream is now playable with,
// so one hook carries the same information.
type StreamChangedHook struct {
	HookHeader
	StreamRef
	Registered bool        `json:"registered"`
	Schemas    []string    `json:"schemas"`
	Origin     string      `json:"origin"`
	OriginURL  string      `json:"originUrl,omitempty"`
	Tracks     []TrackInfo `json:"tracks,omitempty"`
}

// StreamNoneReaderHook reports a stream that has had no reader for
// noReaderTimeout (on_stream_none_reader); an answer with Close true closes
// it.
type StreamNoneReaderHook struct {
	HookHeader
	StreamRef
	Origin string `json:"origin"`
}

// FlowReportHook reports players' traffic (on_flow_report): every
// hooks.flowReportInterval for the players still playing, and within about
// a second for each player that left (Final true). Reports are batched, at
// most FlowReportBatch players per hook, so thousands of players cost a
// few calls rather than thousands. WebRTC (WHIP) publishers' received
// traffic is reported the same way, in Publishers.
type FlowReportHook struct {
	HookHeader
	Players    []PlayerFlow    `json:"players"`
	Publishers []PublisherFlow `json:"publishers,omitempty"`
}

// FlowReportBatch bounds the players (and the publishers) of one
// on_flow_report.
const FlowReportBatch = 500

// PublisherFlow is one publisher's traffic in a flow report: the bytes
// received from it (RTP, after SRTP), as a player's are the bytes sent.
type PublisherFlow struct {
	// ID is the publisher's session (a WHIP resource's last segment).
	ID     string `json:"id"`
	Vhost  string `json:"vhost"`
	App    string `json:"app"`
	Stream string `json:"stream"`
	// Protocol is the publisher's origin, "whip".
	Protocol    string    `json:"protocol"`
	RemoteAddr  string    `json:"remoteAddr"`
	Bytes       uint64    `json:"bytes"`
	StartedAt   time.Time `json:"startedAt"`
	DurationSec float64   `json:"durationSec"`
	// Final is set once the publisher has stopped; Bytes is then its
	// total.
	Final bool `json:"final"`
}

// PlayerFlow is one player's traffic in a flow report.
type PlayerFlow struct {
	PlayerInfo
	DurationSec float64 `json:"durationSec"`
	// Final is set once the player has left; Bytes is then its total.
	Final bool `json:"final"`
}

// KeepaliveHook is sent every hooks.keepaliveInterval
// (on_server_keepalive).
type KeepaliveHook struct {
	HookHeader
	Stats Stats `json:"stats"`
}
