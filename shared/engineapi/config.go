// Package engineapi is the wire contract between the node agent and the
// media engine it supervises: the engine's configuration file (written by
// the agent, read by `svc engine --config FILE`), and the types of the
// engine's loopback control API and of the hooks the engine sends to the
// control plane. Both roles import it; it imports neither.
package engineapi

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is the engine's whole configuration, one YAML file with camelCase
// keys. The agent owns the file (plan, apply with backup and read-back,
// raw edits); the engine reads it at start and on reload.
type Config struct {
	// NodeID is the media host's node id (the agent's enrolled identity).
	NodeID string `yaml:"nodeId" json:"nodeId"`
	// MediaServerID names this engine in hooks, events and listings;
	// defaults to NodeID.
	MediaServerID string `yaml:"mediaServerId" json:"mediaServerId"`

	// ControlAddr is the loopback address of the control API.
	ControlAddr string `yaml:"controlAddr" json:"controlAddr"`
	// ControlSecretFile holds the bearer secret every control API call
	// carries (Authorization: Bearer <secret>); the agent creates it with
	// mode 0600.
	ControlSecretFile string `yaml:"controlSecretFile" json:"controlSecretFile"`

	// HTTPAddr serves the media outputs: /{app}/{stream}.live.flv,
	// /{app}/{stream}.live.mp4 and /{app}/{stream}/hls.m3u8.
	HTTPAddr string `yaml:"httpAddr" json:"httpAddr"`
	// RTSPAddr accepts RTSP publishers (ANNOUNCE/RECORD) and players.
	RTSPAddr string `yaml:"rtspAddr" json:"rtspAddr"`
	// RTPPortMin and RTPPortMax bound the UDP ports the engine uses for RTP
	// and RTCP (RTSP over UDP, later GB28181 PS).
	RTPPortMin int `yaml:"rtpPortMin" json:"rtpPortMin"`
	RTPPortMax int `yaml:"rtpPortMax" json:"rtpPortMax"`

	// DataDir is where the engine may write (recordings come later).
	DataDir string `yaml:"dataDir" json:"dataDir"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `yaml:"logLevel" json:"logLevel"`

	Hooks  HookConfig   `yaml:"hooks" json:"hooks"`
	HLS    HLSConfig    `yaml:"hls" json:"hls"`
	WebRTC WebRTCConfig `yaml:"webrtc" json:"webrtc"`
	// GOPCacheMaxFrames bounds the frames kept from the last keyframe so a
	// new reader starts at once.
	GOPCacheMaxFrames int `yaml:"gopCacheMaxFrames" json:"gopCacheMaxFrames"`
	// ReaderQueueFrames bounds each reader's queue; a reader that falls
	// further behind loses frames (counted) and never slows the others.
	ReaderQueueFrames int `yaml:"readerQueueFrames" json:"readerQueueFrames"`
	// MergeWrite merges each HTTP-FLV/HTTP-fMP4 player's socket writes over
	// this window (ZLMediaKit's mergeWriteMS): a player is woken at most
	// once per window and writes everything queued in one system call, which
	// cuts CPU per player by the number of frames merged at the cost of up
	// to this much latency. 0 (the default) writes every frame at once.
	MergeWrite Duration `yaml:"mergeWrite,omitempty" json:"mergeWrite,omitempty"`
	// NoReaderTimeout is how long a stream may have no reader before
	// on_stream_none_reader is sent.
	NoReaderTimeout Duration `yaml:"noReaderTimeout" json:"noReaderTimeout"`
	// ContinueGrace keeps HTTP-FLV and HTTP-fMP4 players attached for this
	// long when a stream's source drops (a camera reconnecting, a pusher
	// restarting): a publisher of the same path within it continues the
	// stream, its timestamps going on from where they stopped, and the
	// players carry on without reconnecting (ZLMediaKit's
	// continue_push_ms). 0 ends the players with their source.
	ContinueGrace Duration `yaml:"continueGrace" json:"continueGrace"`
	// DemoFile, when set, is looped as the live stream DemoPath (the dev
	// demo's file source).
	DemoFile string `yaml:"demoFile,omitempty" json:"demoFile,omitempty"`
	DemoPath string `yaml:"demoPath,omitempty" json:"demoPath,omitempty"`
	// Recording shapes the recorder; zero fields take RecordingDefaults.
	Recording RecordingConfig `yaml:"recording" json:"recording"`
}

// HookConfig says where and how the engine calls the control plane.
type HookConfig struct {
	// URL is the base URL hooks are posted to (<URL>/<hookName>); empty
	// disables hooks, and then on_play and on_publish allow everything, which
	// only tests and a stand-alone engine use.
	URL string `yaml:"url" json:"url"`
	// FallbackURLs are the same hooks on the other control nodes: when the
	// node behind URL does not answer (down, or unreachable), a hook goes
	// to the next one within the same Timeout, and later hooks go first to
	// the one that answered.
	FallbackURLs []string `yaml:"fallbackUrls,omitempty" json:"fallbackUrls,omitempty"`
	// ClientCertFile and ClientKeyFile authenticate the engine with the
	// node's certificate (mTLS to the agent port); CAFile pins the cluster
	// CA.
	ClientCertFile string `yaml:"clientCertFile,omitempty" json:"clientCertFile,omitempty"`
	ClientKeyFile  string `yaml:"clientKeyFile,omitempty" json:"clientKeyFile,omitempty"`
	CAFile         string `yaml:"caFile,omitempty" json:"caFile,omitempty"`
	// SecretFile, when set, holds a bearer secret sent with every hook.
	SecretFile string `yaml:"secretFile,omitempty" json:"secretFile,omitempty"`
	// Timeout bounds each hook call; on_play and on_publish fail closed when
	// it passes.
	Timeout Duration `yaml:"timeout" json:"timeout"`
	// AllowCacheTTL is how long a positive on_play/on_publish answer is
	// reused for the same stream and parameters.
	AllowCacheTTL Duration `yaml:"allowCacheTtl" json:"allowCacheTtl"`
	// KeepaliveInterval spaces on_server_keepalive calls.
	KeepaliveInterval Duration `yaml:"keepaliveInterval" json:"keepaliveInterval"`
	// FlowReportInterval spaces on_flow_report calls per active player.
	FlowReportInterval Duration `yaml:"flowReportInterval" json:"flowReportInterval"`
}

// HLSConfig shapes the HLS output.
type HLSConfig struct {
	// Format is "fmp4" or "ts".
	Format          string   `yaml:"format" json:"format"`
	SegmentDuration Duration `yaml:"segmentDuration" json:"segmentDuration"`
	// Segments is how many segments the live playlist lists.
	Segments int `yaml:"segments" json:"segments"`
	// SessionTimeout ends a viewer's HLS session after no request.
	SessionTimeout Duration `yaml:"sessionTimeout" json:"sessionTimeout"`
}

// WebRTCConfig shapes WHEP playback and WHIP publishing.
type WebRTCConfig struct {
	// UDPAddr is the one UDP port all WebRTC peers share (ICE UDP mux);
	// empty turns WebRTC off. When the port cannot be bound the engine
	// still serves every other output and logs why WebRTC is off.
	UDPAddr string `yaml:"udpAddr" json:"udpAddr"`
	// TCPAddr accepts ICE-TCP from peers whose network blocks UDP; empty
	// turns the fallback off.
	TCPAddr string `yaml:"tcpAddr,omitempty" json:"tcpAddr,omitempty"`
	// PublicIPs are announced in ICE candidates instead of the local
	// addresses (a media host behind 1:1 NAT).
	PublicIPs []string `yaml:"publicIps,omitempty" json:"publicIps,omitempty"`
	// MaxSessions bounds WHEP viewers and WHIP publishers together.
	MaxSessions int `yaml:"maxSessions" json:"maxSessions"`
}

// Duration is a time.Duration written as "5s" in YAML and JSON.
type Duration time.Duration

func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration like 5s or 250ms", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration like 5s or 250ms", b)
	}
	*d = Duration(v)
	return nil
}

// Defaults are the documented defaults (DESIGN.md section 2 ports).
func Defaults() Config {
	return Config{
		ControlAddr: "127.0.0.1:8089",
		HTTPAddr:    "0.0.0.0:8088",
		RTSPAddr:    "0.0.0.0:8554",
		RTPPortMin:  30000, RTPPortMax: 30999,
		DataDir:  "/var/lib/svc-engine",
		LogLevel: "info",
		Hooks: HookConfig{Timeout: Duration(3 * time.Second), AllowCacheTTL: Duration(10 * time.Second),
			KeepaliveInterval: Duration(10 * time.Second), FlowReportInterval: Duration(30 * time.Second)},
		HLS:               HLSConfig{Format: "fmp4", SegmentDuration: Duration(2 * time.Second), Segments: 5, SessionTimeout: Duration(30 * time.Second)},
		GOPCacheMaxFrames: 600,
		ReaderQueueFrames: 256,
		NoReaderTimeout:   Duration(30 * time.Second),
		ContinueGrace:     Duration(15 * time.Second),
		WebRTC:            WebRTCConfig{UDPAddr: "0.0.0.0:8189", TCPAddr: "0.0.0.0:8189", MaxSessions: 2000},
		Recording:         RecordingDefaults(),
	}
}

// Validate names the first wrong field.
func (c *Config) Validate() error {
	if c.MediaServerID == "" {
		c.MediaServerID = c.NodeID
	}
	if c.MediaServerID == "" {
		return errors.New("mediaServerId (or nodeId) is required")
	}
	host, _, err := net.SplitHostPort(c.ControlAddr)
	if err != nil {
		return fmt.Errorf("controlAddr: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("controlAddr: %q must be a loopback address", c.ControlAddr)
	}
	for name, a := range map[string]string{"httpAddr": c.HTTPAddr, "rtspAddr": c.RTSPAddr} {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if c.RTPPortMin < 1024 || c.RTPPortMax > 65535 || c.RTPPortMin >= c.RTPPortMax || (c.RTPPortMax-c.RTPPortMin) < 3 {
		return fmt.Errorf("rtpPortMin/rtpPortMax: %d-%d is not a range of at least 4 ports within 1024-65535", c.RTPPortMin, c.RTPPortMax)
	}
	for name, a := range map[string]string{"webrtc.udpAddr": c.WebRTC.UDPAddr, "webrtc.tcpAddr": c.WebRTC.TCPAddr} {
		if _, _, err := net.SplitHostPort(a); a != "" && err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	for _, ip := range c.WebRTC.PublicIPs {
		if net.ParseIP(ip) == nil {
			return fmt.Errorf("webrtc.publicIps: %q is not an IP address", ip)
		}
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("logLevel: %q is not debug, info, warn or error", c.LogLevel)
	}
	if c.Hooks.URL != "" && !strings.HasPrefix(c.Hooks.URL, "http://") && !strings.HasPrefix(c.Hooks.URL, "https://") {
		return fmt.Errorf("hooks.url: %q is not an http(s) URL", c.Hooks.URL)
	}
	if len(c.Hooks.FallbackURLs) > 0 && c.Hooks.URL == "" {
		return errors.New("hooks.fallbackUrls: needs hooks.url")
	}
	if len(c.Hooks.FallbackURLs) > 16 {
		return fmt.Errorf("hooks.fallbackUrls: %d URLs, at most 16", len(c.Hooks.FallbackURLs))
	}
	for i, u := range c.Hooks.FallbackURLs {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return fmt.Errorf("hooks.fallbackUrls[%d]: %q is not an http(s) URL", i, u)
		}
	}
	if (c.Hooks.ClientCertFile == "") != (c.Hooks.ClientKeyFile == "") {
		return errors.New("hooks.clientCertFile and hooks.clientKeyFile go together")
	}
	if c.Hooks.Timeout.D() <= 0 || c.Hooks.Timeout.D() > 30*time.Second {
		return fmt.Errorf("hooks.timeout: %s is not within (0, 30s]", c.Hooks.Timeout.D())
	}
	if c.HLS.Format != "fmp4" && c.HLS.Format != "ts" {
		return fmt.Errorf("hls.format: %q is not fmp4 or ts", c.HLS.Format)
	}
	if c.HLS.SegmentDuration.D() < 500*time.Millisecond || c.HLS.SegmentDuration.D() > 20*time.Second {
		return fmt.Errorf("hls.segmentDuration: %s is not within 500ms-20s", c.HLS.SegmentDuration.D())
	}
	if c.HLS.Segments < 2 || c.HLS.Segments > 30 {
		return fmt.Errorf("hls.segments: %d is not within 2-30", c.HLS.Segments)
	}
	if c.GOPCacheMaxFrames < 1 || c.ReaderQueueFrames < 8 {
		return errors.New("gopCacheMaxFrames must be >= 1 and readerQueueFrames >= 8")
	}
	if c.ContinueGrace < 0 || c.ContinueGrace.D() > 10*time.Minute {
		return fmt.Errorf("continueGrace: %s is not within 0-10m", c.ContinueGrace.D())
	}
	if c.MergeWrite < 0 || c.MergeWrite.D() > 500*time.Millisecond {
		return fmt.Errorf("mergeWrite: %s is not within 0-500ms", c.MergeWrite.D())
	}
	if (c.DemoFile == "") != (c.DemoPath == "") {
		return errors.New("demoFile and demoPath go together")
	}
	c.Recording.fillDefaults()
	return c.Recording.Validate()
}

// Parse reads a configuration over the defaults and validates it; unknown
// keys are errors, so a typo is not silently ignored.
func Parse(b []byte) (Config, error) {
	c := Defaults()
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("engine config: %w", err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("engine config: %w", err)
	}
	return c, nil
}

// Load reads and parses a configuration file.
func Load(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	return Parse(b)
}

// Marshal renders c as the YAML file the engine reads.
func (c Config) Marshal() ([]byte, error) { return yaml.Marshal(c) }

// ReadSecret reads a secret file, trimming the trailing newline.
func ReadSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return s, nil
}
