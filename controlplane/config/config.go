// Package config holds the control node's one typed configuration: defaults,
// then a YAML file, then SVC_* environment variables, then command-line flags,
// then Validate, which names the field that is wrong.
package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/store/raftnode"
)

// Config is every setting of `svc server`. Each field has a flag (tag
// `flag`), an environment variable (tag `env`) and a config-file key (tag
// `yaml`); the usage text is the `usage` tag.
type Config struct {
	NodeID   string `flag:"node-id" env:"SVC_NODE_ID" yaml:"nodeId" usage:"unique id of this control node (letters, digits, . _ -)"`
	DataDir  string `flag:"data-dir" env:"SVC_DATA_DIR" yaml:"dataDir" usage:"directory for the raft log, snapshots and state database"`
	HTTPAddr string `flag:"http-addr" env:"SVC_HTTP_ADDR" yaml:"httpAddr" usage:"HOST:PORT the HTTP API listens on"`
	RaftAddr string `flag:"raft-addr" env:"SVC_RAFT_ADDR" yaml:"raftAddr" usage:"HOST:PORT of the internal link (raft and forwarding) between control nodes"`
	// AdvertiseHTTP is the base URL other nodes and tools use to reach this
	// node's API; it defaults to http://HTTPAddr.
	AdvertiseHTTP string `flag:"advertise-http" env:"SVC_ADVERTISE_HTTP" yaml:"advertiseHttp" usage:"base URL other nodes use to reach this API (default http://<http-addr>)"`
	Join          string `flag:"join" env:"SVC_JOIN" yaml:"join" usage:"API URL of any member of an existing cluster to join; empty founds a new cluster"`
	ConfigFile    string `flag:"config" env:"SVC_CONFIG" yaml:"-" usage:"YAML configuration file"`
	// ClusterKeyFile is the keyring shared by every control node; it
	// authenticates the internal link and encrypts secrets at rest.
	ClusterKeyFile string   `flag:"cluster-key-file" env:"SVC_CLUSTER_KEY_FILE" yaml:"clusterKeyFile" usage:"cluster keyring file, the same on every control node (default <data-dir>/cluster.key, created when missing)"`
	LogLevel       string   `flag:"log-level" env:"SVC_LOG_LEVEL" yaml:"logLevel" usage:"debug, info, warn or error"`
	MaxBodyBytes   int64    `flag:"max-body-bytes" env:"SVC_MAX_BODY_BYTES" yaml:"maxBodyBytes" usage:"largest accepted JSON request body in bytes"`
	TrustedProxies []string `flag:"trusted-proxies" env:"SVC_TRUSTED_PROXIES" yaml:"trustedProxies" usage:"comma-separated CIDRs of reverse proxies whose X-Forwarded-For is believed"`
	// ClientIPHeaders are the headers, in order, a trusted proxy's client
	// address is read from. X-Real-IP is not among them unless configured:
	// a proxy that sets X-Forwarded-For but passes a client's X-Real-IP on
	// would let the client choose its own address.
	ClientIPHeaders []string      `flag:"client-ip-headers" env:"SVC_CLIENT_IP_HEADERS" yaml:"clientIpHeaders" usage:"comma-separated headers a trusted proxy's client address is read from, in order (X-Forwarded-For, X-Real-IP)"`
	ShutdownGrace   time.Duration `flag:"shutdown-grace" env:"SVC_SHUTDOWN_GRACE" yaml:"shutdownGrace" usage:"how long a graceful shutdown waits for requests and leadership transfer"`
	// MaxConnectionsPerClient and RequestBodyTimeout bound what one client
	// can hold of the API and the agent port (package connguard): open
	// connections per address (trusted proxies exempt), and the time to send
	// a request body (WebSockets and long polls have none still arriving).
	MaxConnectionsPerClient int           `flag:"max-connections-per-client" env:"SVC_MAX_CONNECTIONS_PER_CLIENT" yaml:"maxConnectionsPerClient" usage:"open connections one client address may hold on the API and on the agent port (trusted proxies exempt)"`
	RequestBodyTimeout      time.Duration `flag:"request-body-timeout" env:"SVC_REQUEST_BODY_TIMEOUT" yaml:"requestBodyTimeout" usage:"time a client has to send a request body before its connection is closed"`
	// HistoryRetention is how many revisions of watch history are kept
	// before the retention task compacts them.
	HistoryRetention int64 `flag:"history-retention" env:"SVC_HISTORY_RETENTION" yaml:"historyRetention" usage:"revisions of watch history kept before compaction"`
	// RaftSegmentMiB is the size of one raft log segment file, which
	// raft-wal preallocates; 0 sizes it from the data directory's
	// filesystem (1/16 of it, between 1 and 64 MiB).
	RaftSegmentMiB int `flag:"raft-segment-mib" env:"SVC_RAFT_SEGMENT_MIB" yaml:"raftSegmentMiB" usage:"size in MiB of one raft log segment file, preallocated (0: 1/16 of the data directory's filesystem, 1..64)"`
	// StorageReserveMiB is the free space on the data directory's
	// filesystem below which this node refuses writes (507 storage_full),
	// so it always has room to apply what the cluster committed; 0 takes
	// 1/20 of the filesystem, between 4 MiB and 1 GiB. The node raises it
	// to one raft segment plus 2 MiB when it is lower.
	StorageReserveMiB int `flag:"storage-reserve-mib" env:"SVC_STORAGE_RESERVE_MIB" yaml:"storageReserveMiB" usage:"free disk space in MiB below which this node refuses writes (0: 1/20 of the data directory's filesystem, 4..1024; at least a raft segment + 2)"`

	// Console sessions: the access token's and the session's lifetimes, and
	// how many logins per minute one client address or user name may try.
	SessionAccessTTL   time.Duration `flag:"session-access-ttl" env:"SVC_SESSION_ACCESS_TTL" yaml:"sessionAccessTtl" usage:"lifetime of a console session's access token (refreshed by the console)"`
	SessionTTL         time.Duration `flag:"session-ttl" env:"SVC_SESSION_TTL" yaml:"sessionTtl" usage:"absolute lifetime of a console session; then the user logs in again"`
	LoginRatePerMinute int           `flag:"login-rate-per-minute" env:"SVC_LOGIN_RATE_PER_MINUTE" yaml:"loginRatePerMinute" usage:"login attempts per minute allowed per client address and per user name"`
	// AgentAddr is the agent port: HTTPS with mutual TLS under the
	// cluster CA, where node agents enroll and poll their commands.
	AgentAddr string `flag:"agent-addr" env:"SVC_AGENT_ADDR" yaml:"agentAddr" usage:"HOST:PORT of the agent port (mTLS) node agents connect to"`
	// AdvertiseAgent is the agent port URL given to agents (enrollment
	// command, failover list); its host goes into the server certificate.
	AdvertiseAgent string `flag:"advertise-agent" env:"SVC_ADVERTISE_AGENT" yaml:"advertiseAgent" usage:"https URL agents use to reach the agent port (default https://<agent-addr>, 127.0.0.1 for a wildcard address)"`
	// NodeHeartbeatTTL is how long a node agent may stay silent before the
	// leader marks it offline.
	NodeHeartbeatTTL time.Duration `flag:"node-heartbeat-ttl" env:"SVC_NODE_HEARTBEAT_TTL" yaml:"nodeHeartbeatTtl" usage:"silence after which the leader marks a node agent offline"`
	// CommandVisibility is how long a delivered node command stays with its
	// agent without news before it is handed out again.
	CommandVisibility time.Duration `flag:"command-visibility" env:"SVC_COMMAND_VISIBILITY" yaml:"commandVisibility" usage:"delivery deadline of a node command before it is handed out again"`
	// MonitoringRetention bounds the in-memory history of node figures.
	MonitoringRetention time.Duration `flag:"monitoring-retention" env:"SVC_MONITORING_RETENTION" yaml:"monitoringRetention" usage:"how much heartbeat history each control node keeps in memory"`
	// GCHeapFloorMiB is the heap size the process grows to before the Go
	// garbage collector runs (package gcfloor); 0 keeps Go's default. A
	// GOGC in the environment overrides it.
	GCHeapFloorMiB int `flag:"gc-heap-floor-mib" env:"SVC_GC_HEAP_FLOOR_MIB" yaml:"gcHeapFloorMiB" usage:"heap size in MiB below which the garbage collector does not run (0: Go's default; GOGC overrides)"`

	// PlaybackMaxLinkSeconds bounds the lifetime of one-time playback URLs.
	PlaybackMaxLinkSeconds int `flag:"playback-max-link-seconds" env:"SVC_PLAYBACK_MAX_LINK_SECONDS" yaml:"playbackMaxLinkSeconds" usage:"longest lifetime of a one-time playback URL, in seconds (at least 30)"`

	SMTPHost     string `flag:"smtp-host" env:"SVC_SMTP_HOST" yaml:"smtpHost" usage:"SMTP server for operations e-mail (empty disables e-mail)"`
	SMTPPort     int    `flag:"smtp-port" env:"SVC_SMTP_PORT" yaml:"smtpPort" usage:"SMTP port"`
	SMTPFrom     string `flag:"smtp-from" env:"SVC_SMTP_FROM" yaml:"smtpFrom" usage:"sender address of operations e-mail"`
	SMTPUsername string `flag:"smtp-username" env:"SVC_SMTP_USERNAME" yaml:"smtpUsername" usage:"SMTP user name (empty: no authentication)"`
	// SMTPPasswordFile keeps the password out of flags, environment and logs.
	SMTPPasswordFile string `flag:"smtp-password-file" env:"SVC_SMTP_PASSWORD_FILE" yaml:"smtpPasswordFile" usage:"file holding the SMTP password"`
	SMTPStartTLS     bool   `flag:"smtp-starttls" env:"SVC_SMTP_STARTTLS" yaml:"smtpStartTls" usage:"require STARTTLS with the SMTP server"`

	// AuditRetention and AuditMaxEntries bound the security audit log: the
	// leader removes records older than the first, and the oldest beyond
	// the second in number. AuditDenialWindow sums up the permission
	// denials of one credential: the first is recorded as it happens, the
	// rest in one record per window.
	AuditRetention    time.Duration `flag:"audit-retention" env:"SVC_AUDIT_RETENTION" yaml:"auditRetention" usage:"how long security audit records are kept"`
	AuditMaxEntries   int           `flag:"audit-max-entries" env:"SVC_AUDIT_MAX_ENTRIES" yaml:"auditMaxEntries" usage:"most security audit records kept (the oldest go first)"`
	AuditDenialWindow time.Duration `flag:"audit-denial-window" env:"SVC_AUDIT_DENIAL_WINDOW" yaml:"auditDenialWindow" usage:"window over which one credential's permission denials are summed up in one audit record"`
	// TokenUsageInterval is how often a control node writes when API
	// tokens were last used (lastUsedAt), in one Txn for all of them.
	TokenUsageInterval time.Duration `flag:"token-usage-interval" env:"SVC_TOKEN_USAGE_INTERVAL" yaml:"tokenUsageInterval" usage:"how often API tokens' lastUsedAt is written (batched, never per request)"`
	// RecordingDiskSweepInterval is how often the leader reads every media
	// host's recording volume and marks the files the engines' retention
	// deleted (by age or by the low watermark) Deleted in the index.
	RecordingDiskSweepInterval time.Duration `flag:"recording-disk-sweep-interval" env:"SVC_RECORDING_DISK_SWEEP_INTERVAL" yaml:"recordingDiskSweepInterval" usage:"how often the leader marks the recordings the engines' retention deleted"`

	// WebhookAllowPrivateTargets lets delivery plans target loopback,
	// link-local and cloud-metadata addresses; off, such endpoints are
	// refused when a plan is saved and on every connection (SSRF guard).
	WebhookAllowPrivateTargets bool `flag:"webhook-allow-private-targets" env:"SVC_WEBHOOK_ALLOW_PRIVATE_TARGETS" yaml:"webhookAllowPrivateTargets" usage:"allow webhook endpoints on loopback, link-local or cloud-metadata addresses (isolated test networks only)"`
	// EventOutboxRetention and EventOutboxMaxEntries bound the outbox:
	// delivered events older than the first, or beyond the second in
	// number, are removed with their deliveries; the engine webhook inbox
	// follows the same bounds.
	EventOutboxRetention  time.Duration `flag:"event-outbox-retention" env:"SVC_EVENT_OUTBOX_RETENTION" yaml:"eventOutboxRetention" usage:"how long delivered events (and received engine hooks) are kept"`
	EventOutboxMaxEntries int           `flag:"event-outbox-max-entries" env:"SVC_EVENT_OUTBOX_MAX_ENTRIES" yaml:"eventOutboxMaxEntries" usage:"most delivered events (and received engine hooks) kept"`
	// WebhookLegacyEndpoint and WebhookLegacySecretFile are the single
	// outbound webhook of older versions. On first start as leader they are
	// migrated once into the plan "Default delivery plan" (secret sealed
	// with the keyring), only when no plan exists; after that they are not
	// read again and can be removed.
	WebhookLegacyEndpoint   string `flag:"webhook-legacy-endpoint" env:"SVC_WEBHOOK_LEGACY_ENDPOINT" yaml:"webhookLegacyEndpoint" usage:"legacy single outbound webhook URL, migrated once to a delivery plan"`
	WebhookLegacySecretFile string `flag:"webhook-legacy-secret-file" env:"SVC_WEBHOOK_LEGACY_SECRET_FILE" yaml:"webhookLegacySecretFile" usage:"file holding the legacy webhook's HMAC secret"`

	// GB28181 signalling (controlplane/gb28181): the SIP registrar serves
	// UDP and TCP on SIPAddr once a device password file is set; there is
	// no default password, so no node accepts devices by accident.
	SIPAddr             string `flag:"sip-addr" env:"SVC_SIP_ADDR" yaml:"sipAddr" usage:"HOST:PORT of the GB28181 SIP server (UDP and TCP)"`
	GB28181ID           string `flag:"gb28181-id" env:"SVC_GB28181_ID" yaml:"gb28181Id" usage:"the platform's 20-digit GB28181 SIP server code"`
	GB28181Domain       string `flag:"gb28181-domain" env:"SVC_GB28181_DOMAIN" yaml:"gb28181Domain" usage:"the GB28181 SIP domain, also the digest realm"`
	GB28181PasswordFile string `flag:"gb28181-password-file" env:"SVC_GB28181_PASSWORD_FILE" yaml:"gb28181PasswordFile" usage:"file holding the password GB28181 devices register with; the SIP server runs only when it is set"`
	// GB28181RTPTimeout is how long a GB28181 stream's RTP server waits
	// without media before the session ends (on_rtp_server_timeout):
	// long enough for a device that is slow to start sending, short
	// enough that a dead stream is retried soon.
	GB28181RTPTimeout time.Duration `flag:"gb28181-rtp-timeout" env:"SVC_GB28181_RTP_TIMEOUT" yaml:"gb28181RtpTimeout" usage:"silence after which a GB28181 live or playback stream's RTP server closes (whole seconds)"`
	// GB28181HolderTimeout is how long the control node holding devices'
	// SIP transports may fail to answer the leader before its devices are
	// marked offline (a node that left the cluster: at once).
	GB28181HolderTimeout time.Duration `flag:"gb28181-holder-timeout" env:"SVC_GB28181_HOLDER_TIMEOUT" yaml:"gb28181HolderTimeout" usage:"silence of a control node after which the GB28181 devices it held are marked offline"`
	// GB28181RecordQueryRetention is how long record queries (and the
	// playback actions they hand out) are kept.
	GB28181RecordQueryRetention time.Duration `flag:"gb28181-record-query-retention" env:"SVC_GB28181_RECORD_QUERY_RETENTION" yaml:"gb28181RecordQueryRetention" usage:"how long GB28181 record query results are kept"`

	// The local media host of `svc dev` (tag `dev`: flags of svc dev only,
	// absent from svc server's). Like `svc agent run`'s engine flags they
	// take effect when the data directory is new. A test, or a second
	// platform, moves them off the defaults to run beside a running one.
	DevEngineHTTPAddr    string `flag:"engine-http-addr" env:"SVC_DEV_ENGINE_HTTP_ADDR" yaml:"engineHttpAddr" dev:"true" usage:"HOST:PORT of the local engine's media HTTP (HTTP-FLV, HTTP-fMP4, HLS)"`
	DevEngineRTSPAddr    string `flag:"engine-rtsp-addr" env:"SVC_DEV_ENGINE_RTSP_ADDR" yaml:"engineRtspAddr" dev:"true" usage:"HOST:PORT of the local engine's RTSP server"`
	DevEngineWebRTCAddr  string `flag:"engine-webrtc-addr" env:"SVC_DEV_ENGINE_WEBRTC_ADDR" yaml:"engineWebrtcAddr" dev:"true" usage:"HOST:PORT of the local engine's WebRTC port (UDP and ICE-TCP: WHEP, WHIP); empty takes the engine's default"`
	DevEngineControlAddr string `flag:"engine-control-addr" env:"SVC_DEV_ENGINE_CONTROL_ADDR" yaml:"engineControlAddr" dev:"true" usage:"loopback HOST:PORT of the local engine's control API"`
	DevEngineRTPPortMin  int    `flag:"engine-rtp-port-min" env:"SVC_DEV_ENGINE_RTP_PORT_MIN" yaml:"engineRtpPortMin" dev:"true" usage:"first port of the local engine's RTP range"`
	DevEngineRTPPortMax  int    `flag:"engine-rtp-port-max" env:"SVC_DEV_ENGINE_RTP_PORT_MAX" yaml:"engineRtpPortMax" dev:"true" usage:"last port of the local engine's RTP range"`

	// Bootstrap is set by `svc dev`: found a single-node cluster.
	Bootstrap bool `flag:"-" env:"-" yaml:"-"`
}

// Defaults returns the configuration before any file, environment or flag.
func Defaults() Config {
	host, _ := os.Hostname()
	if host == "" || !raftnode.NodeIDPattern.MatchString(host) {
		host = "node-1"
	}
	return Config{
		NodeID:                  host,
		DataDir:                 "/var/lib/svc",
		HTTPAddr:                "127.0.0.1:8080",
		RaftAddr:                "127.0.0.1:8300",
		LogLevel:                "info",
		MaxBodyBytes:            1 << 20,
		ShutdownGrace:           10 * time.Second,
		ClientIPHeaders:         []string{"X-Forwarded-For"},
		MaxConnectionsPerClient: 256,
		RequestBodyTimeout:      30 * time.Second,
		HistoryRetention:        100000,
		SessionAccessTTL:        10 * time.Minute,
		SessionTTL:              12 * time.Hour,
		LoginRatePerMinute:      20,
		PlaybackMaxLinkSeconds:  600,
		SMTPPort:                587,
		SMTPStartTLS:            true,
		AgentAddr:               "0.0.0.0:8443",
		NodeHeartbeatTTL:        15 * time.Second,
		CommandVisibility:       30 * time.Second,
		MonitoringRetention:     24 * time.Hour,
		GCHeapFloorMiB:          256,

		EventOutboxRetention:  7 * 24 * time.Hour,
		EventOutboxMaxEntries: 100000,

		AuditRetention:     365 * 24 * time.Hour,
		AuditMaxEntries:    1_000_000,
		AuditDenialWindow:  time.Minute,
		TokenUsageInterval: time.Minute,

		RecordingDiskSweepInterval: 30 * time.Second,

		SIPAddr:       "0.0.0.0:5060",
		GB28181ID:     "34020000002000000001",
		GB28181Domain: "3402000000",

		GB28181RTPTimeout:           15 * time.Second,
		GB28181HolderTimeout:        30 * time.Second,
		GB28181RecordQueryRetention: 24 * time.Hour,
	}
}

// Validate reports the first wrong field by its flag name.
func (c *Config) Validate() error {
	bad := func(flag, format string, args ...any) error {
		return fmt.Errorf("config field %s: %s", flag, fmt.Sprintf(format, args...))
	}
	if !raftnode.NodeIDPattern.MatchString(c.NodeID) {
		return bad("node-id", "%q must match %s", c.NodeID, raftnode.NodeIDPattern)
	}
	if c.DataDir == "" {
		return bad("data-dir", "is required")
	}
	for _, a := range []struct{ flag, v string }{{"http-addr", c.HTTPAddr}, {"raft-addr", c.RaftAddr}, {"agent-addr", c.AgentAddr}} {
		host, port, err := net.SplitHostPort(a.v)
		if err != nil || port == "" {
			return bad(a.flag, "%q is not HOST:PORT", a.v)
		}
		if host != "" && net.ParseIP(host) == nil && strings.ContainsAny(host, "/ ") {
			return bad(a.flag, "%q has an invalid host", a.v)
		}
	}
	for _, u := range []struct{ flag, v string }{{"advertise-http", c.AdvertiseHTTP}, {"join", c.Join}} {
		if u.v == "" {
			continue
		}
		p, err := url.Parse(u.v)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return bad(u.flag, "%q is not an absolute http(s) URL", u.v)
		}
	}
	if c.AdvertiseAgent != "" {
		p, err := url.Parse(c.AdvertiseAgent)
		if err != nil || p.Scheme != "https" || p.Host == "" || p.Path != "" && p.Path != "/" {
			return bad("advertise-agent", "%q is not an https URL without a path", c.AdvertiseAgent)
		}
	}
	if c.NodeHeartbeatTTL < 3*time.Second || c.NodeHeartbeatTTL > 10*time.Minute {
		return bad("node-heartbeat-ttl", "%s is outside 3s..10m", c.NodeHeartbeatTTL)
	}
	if c.CommandVisibility < time.Second || c.CommandVisibility > time.Hour {
		return bad("command-visibility", "%s is outside 1s..1h", c.CommandVisibility)
	}
	if c.GCHeapFloorMiB < 0 || c.GCHeapFloorMiB > 1<<20 {
		return bad("gc-heap-floor-mib", "%d is outside 0..1048576", c.GCHeapFloorMiB)
	}
	if c.MonitoringRetention < time.Minute || c.MonitoringRetention > 7*24*time.Hour {
		return bad("monitoring-retention", "%s is outside 1m..168h", c.MonitoringRetention)
	}
	if c.Join != "" && c.Bootstrap {
		return bad("join", "cannot join another cluster in dev mode")
	}
	if c.Bootstrap {
		addrs := []struct{ flag, v string }{{"engine-http-addr", c.DevEngineHTTPAddr}, {"engine-rtsp-addr", c.DevEngineRTSPAddr},
			{"engine-control-addr", c.DevEngineControlAddr}}
		for _, a := range addrs {
			if _, port, err := net.SplitHostPort(a.v); err != nil || port == "" {
				return bad(a.flag, "%q is not HOST:PORT", a.v)
			}
		}
		if _, port, err := net.SplitHostPort(c.DevEngineWebRTCAddr); c.DevEngineWebRTCAddr != "" && (err != nil || port == "") {
			return bad("engine-webrtc-addr", "%q is not HOST:PORT", c.DevEngineWebRTCAddr)
		}
		if c.DevEngineRTPPortMin < 1024 || c.DevEngineRTPPortMax > 65535 || c.DevEngineRTPPortMax-c.DevEngineRTPPortMin < 3 {
			return bad("engine-rtp-port-min", "%d-%d is not a range of at least 4 ports within 1024-65535", c.DevEngineRTPPortMin, c.DevEngineRTPPortMax)
		}
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return bad("log-level", "%q is not one of debug, info, warn, error", c.LogLevel)
	}
	if c.MaxBodyBytes < 1024 || c.MaxBodyBytes > 64<<20 {
		return bad("max-body-bytes", "%d is outside 1024..67108864", c.MaxBodyBytes)
	}
	for _, p := range c.TrustedProxies {
		if _, _, err := net.ParseCIDR(p); err != nil {
			return bad("trusted-proxies", "%q is not a CIDR", p)
		}
	}
	for _, h := range c.ClientIPHeaders {
		if !strings.EqualFold(h, "X-Forwarded-For") && !strings.EqualFold(h, "X-Real-IP") {
			return bad("client-ip-headers", "%q is not X-Forwarded-For or X-Real-IP", h)
		}
	}
	if c.MaxConnectionsPerClient < 8 || c.MaxConnectionsPerClient > 1_000_000 {
		return bad("max-connections-per-client", "%d is outside 8..1000000", c.MaxConnectionsPerClient)
	}
	if c.RequestBodyTimeout < time.Second || c.RequestBodyTimeout > 10*time.Minute {
		return bad("request-body-timeout", "%s is outside 1s..10m", c.RequestBodyTimeout)
	}
	if c.ShutdownGrace < 0 || c.ShutdownGrace > 5*time.Minute {
		return bad("shutdown-grace", "%s is outside 0..5m", c.ShutdownGrace)
	}
	if c.RaftSegmentMiB < 0 || c.RaftSegmentMiB > 1024 {
		return bad("raft-segment-mib", "%d is outside 0..1024", c.RaftSegmentMiB)
	}
	if c.StorageReserveMiB < 0 || c.StorageReserveMiB > 1<<20 {
		return bad("storage-reserve-mib", "%d is outside 0..1048576", c.StorageReserveMiB)
	}
	if c.HistoryRetention < 1000 {
		return bad("history-retention", "%d is below 1000 revisions", c.HistoryRetention)
	}
	if c.SessionAccessTTL < time.Minute || c.SessionAccessTTL > time.Hour {
		return bad("session-access-ttl", "%s is outside 1m..1h", c.SessionAccessTTL)
	}
	if c.SessionTTL < 10*time.Minute || c.SessionTTL > 30*24*time.Hour || c.SessionTTL < c.SessionAccessTTL {
		return bad("session-ttl", "%s is outside 10m..720h or shorter than session-access-ttl", c.SessionTTL)
	}
	if c.LoginRatePerMinute < 1 || c.LoginRatePerMinute > 100000 {
		return bad("login-rate-per-minute", "%d is outside 1..100000", c.LoginRatePerMinute)
	}
	if c.PlaybackMaxLinkSeconds < 30 || c.PlaybackMaxLinkSeconds > 86400 {
		return bad("playback-max-link-seconds", "%d is outside 30..86400", c.PlaybackMaxLinkSeconds)
	}
	if c.SMTPHost != "" {
		if c.SMTPPort < 1 || c.SMTPPort > 65535 {
			return bad("smtp-port", "%d is not a port", c.SMTPPort)
		}
		if !strings.Contains(c.SMTPFrom, "@") {
			return bad("smtp-from", "%q is not an e-mail address", c.SMTPFrom)
		}
	}
	if c.EventOutboxRetention < time.Minute {
		return bad("event-outbox-retention", "%s is below 1m", c.EventOutboxRetention)
	}
	if c.EventOutboxMaxEntries < 100 {
		return bad("event-outbox-max-entries", "%d is below 100", c.EventOutboxMaxEntries)
	}
	if c.AuditRetention < time.Hour {
		return bad("audit-retention", "%s is below 1h", c.AuditRetention)
	}
	if c.AuditMaxEntries < 1000 {
		return bad("audit-max-entries", "%d is below 1000", c.AuditMaxEntries)
	}
	if c.AuditDenialWindow < time.Second || c.AuditDenialWindow > time.Hour {
		return bad("audit-denial-window", "%s is outside 1s..1h", c.AuditDenialWindow)
	}
	if c.TokenUsageInterval < time.Second || c.TokenUsageInterval > time.Hour {
		return bad("token-usage-interval", "%s is outside 1s..1h", c.TokenUsageInterval)
	}
	if c.RecordingDiskSweepInterval < time.Second || c.RecordingDiskSweepInterval > time.Hour {
		return bad("recording-disk-sweep-interval", "%s is outside 1s..1h", c.RecordingDiskSweepInterval)
	}
	if c.GB28181RTPTimeout < time.Second || c.GB28181RTPTimeout > 10*time.Minute || c.GB28181RTPTimeout%time.Second != 0 {
		return bad("gb28181-rtp-timeout", "%s is not whole seconds within 1s..10m", c.GB28181RTPTimeout)
	}
	if c.GB28181HolderTimeout < time.Second || c.GB28181HolderTimeout > 10*time.Minute {
		return bad("gb28181-holder-timeout", "%s is outside 1s..10m", c.GB28181HolderTimeout)
	}
	if c.GB28181RecordQueryRetention < 10*time.Minute || c.GB28181RecordQueryRetention > 31*24*time.Hour {
		return bad("gb28181-record-query-retention", "%s is outside 10m..744h (pruning runs every 10 minutes)", c.GB28181RecordQueryRetention)
	}
	if (c.WebhookLegacyEndpoint == "") != (c.WebhookLegacySecretFile == "") {
		return bad("webhook-legacy-endpoint", "needs webhook-legacy-secret-file, and the other way round")
	}
	return nil
}

// KeyFile is the keyring path after defaults.
func (c *Config) KeyFile() string {
	if c.ClusterKeyFile != "" {
		return c.ClusterKeyFile
	}
	return filepath.Join(c.DataDir, "cluster.key")
}

// Bound is the address to advertise for a listener configured with addr:
// bound, the listener's own address, when addr left the port to the system
// (port 0, as tests do to avoid racing other processes for free ports);
// addr otherwise, so a wildcard host stays what the operator wrote.
func Bound(addr, bound string) string {
	if _, port, err := net.SplitHostPort(addr); err == nil && port == "0" {
		return bound
	}
	return addr
}

// APIURL is the base URL of this node's API as others should use it.
func (c *Config) APIURL() string {
	if c.AdvertiseHTTP != "" {
		return strings.TrimRight(c.AdvertiseHTTP, "/")
	}
	host, port, _ := net.SplitHostPort(c.HTTPAddr)
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// GCHeapFloorBytes is GCHeapFloorMiB in bytes, as gcfloor.Start takes it.
func (c *Config) GCHeapFloorBytes() uint64 { return uint64(c.GCHeapFloorMiB) << 20 }

// AgentURL is the agent port's URL as agents should use it.
func (c *Config) AgentURL() string {
	if c.AdvertiseAgent != "" {
		return strings.TrimRight(c.AdvertiseAgent, "/")
	}
	host, port, _ := net.SplitHostPort(c.AgentAddr)
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "https://" + net.JoinHostPort(host, port)
}

// AgentHosts are the names and addresses the agent port's certificate
// covers: the advertised host, the bound address when specific, this
// machine's name and loopback.
func (c *Config) AgentHosts() []string {
	hosts := []string{"127.0.0.1", "::1", "localhost"}
	if u, err := url.Parse(c.AgentURL()); err == nil {
		hosts = append(hosts, u.Hostname())
	}
	if h, _, err := net.SplitHostPort(c.AgentAddr); err == nil && h != "" && h != "0.0.0.0" && h != "::" {
		hosts = append(hosts, h)
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		hosts = append(hosts, h)
	}
	seen := map[string]bool{}
	out := hosts[:0]
	for _, h := range hosts {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

// ErrHelp is returned by Load when -h was given.
var ErrHelp = fault.New(fault.Invalid, "invalid_body", "help requested")
