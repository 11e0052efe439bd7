package channels

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/svcplatform/svc/shared/credurl"
)

// ChannelID identifies a channel (a UUIDv7 chosen at creation).
type ChannelID string

// GroupKey identifies a channel group (chosen by its creator).
type GroupKey string

// CommandID identifies a stream command (a UUIDv7).
type CommandID string

// Protocol is how the platform reaches a channel's source.
type Protocol string

const (
	ProtocolRTSP    Protocol = "rtsp"
	ProtocolONVIF   Protocol = "onvif"
	ProtocolGB28181 Protocol = "gb28181"
)

// Activation says whether a channel is in the pending-activation pool
// (imported or discovered, not yet approved) or active.
type Activation string

const (
	ActivationPending Activation = "Pending"
	ActivationActive  Activation = "Active"
)

// DesiredState is what the channel's owner asked for.
type DesiredState string

const (
	DesiredRunning DesiredState = "Running"
	DesiredStopped DesiredState = "Stopped"
)

// ActualState is what the stream is doing, as reported by the stream
// dispatcher and the engine hooks. Values are append-only.
type ActualState string

const (
	ActualOffline  ActualState = "Offline"
	ActualStarting ActualState = "Starting"
	ActualOnline   ActualState = "Online"
	ActualRetrying ActualState = "Retrying"
	ActualPaused   ActualState = "Paused"
	ActualFailed   ActualState = "Failed"
)

// RTSPTransport is the lower transport an RTSP pull uses.
type RTSPTransport string

const (
	TransportAuto RTSPTransport = "auto"
	TransportTCP  RTSPTransport = "tcp"
	TransportUDP  RTSPTransport = "udp"
)

// DefaultVhost is the virtual host of channels that do not name one.
const DefaultVhost = "__defaultVhost__"

// Config is what an operator configures on a channel: everything that an
// export carries. Its source URL never holds credentials (see Channel).
type Config struct {
	Name            string        `json:"name"`
	Description     string        `json:"description"`
	Protocol        Protocol      `json:"protocol"`
	SourceURL       string        `json:"sourceUrl"`
	RTSPTransport   RTSPTransport `json:"rtspTransport"`
	Vhost           string        `json:"vhost"`
	App             string        `json:"app"`
	Stream          string        `json:"stream"`
	MediaServerID   string        `json:"mediaServerId"`
	DeviceID        string        `json:"deviceId"`
	DeviceChannelID string        `json:"deviceChannelId"`
	GroupKey        GroupKey      `json:"groupKey"`
	Enabled         bool          `json:"enabled"`
	AutoVideo       bool          `json:"autoVideo"`
	AutoRecord      bool          `json:"autoRecord"`
	HasAudio        bool          `json:"hasAudio"`
	NoPlayerBreak   bool          `json:"noPlayerBreak"`
	HasPTZ          bool          `json:"hasPtz"`
	IsShareChannel  bool          `json:"isShareChannel"`
	// AllowBasicAuthOverPlainRTSP lets the engine answer the camera's Basic
	// challenge over plain rtsp://, which sends the password readable to
	// anyone on the path; off (the default) only Digest is answered.
	AllowBasicAuthOverPlainRTSP bool `json:"allowBasicAuthOverPlainRtsp,omitempty"`
}

// defaultConfig is what a new channel starts from.
func defaultConfig() Config {
	return Config{Vhost: DefaultVhost, RTSPTransport: TransportAuto, Enabled: true, HasAudio: true}
}

// Channel is the stored record. Its source URL never holds credentials:
// they are split off on save and kept only in SealedCredentials, sealed with
// the cluster keyring and bound to the channel's key.
type Channel struct {
	ChannelID ChannelID `json:"channelId"`
	Config
	// NodeID is the node of the assigned media server, set by placement.
	NodeID string `json:"nodeId"`

	// SealedCredentials are the source's credentials (credurl.Credentials:
	// the userinfo and any user or password parameters of the query or the
	// path), sealed; empty when the source needs none.
	SealedCredentials string `json:"sealedCredentials,omitempty"`
	// CredentialsOnlyInParams is set when the sealed credentials have no
	// userinfo (they sit in parameters, masked in SourceURL itself), so the
	// masked URL gets no "***@".
	CredentialsOnlyInParams bool `json:"credentialsOnlyInParams,omitempty"`

	Activation         Activation   `json:"activationState"`
	DesiredState       DesiredState `json:"desiredState"`
	ActualState        ActualState  `json:"actualState"`
	ActualStateReason  string       `json:"actualStateReason"`
	ActualStateAt      time.Time    `json:"actualStateAt"`
	AutoRecoveryPaused bool         `json:"autoRecoveryPaused"`
	Retry              RetryState   `json:"retry"`
	LastCommandID      CommandID    `json:"lastCommandId,omitempty"`

	CreatedAt time.Time `json:"createdAt"`
	CreatedBy string    `json:"createdBy"`
	UpdatedAt time.Time `json:"updatedAt"`
	UpdatedBy string    `json:"updatedBy"`

	// Revision is the store mod revision the record was read at (not
	// stored, and not filled by List).
	Revision int64 `json:"-"`
}

// RetryState is the auto-recovery backoff of a channel.
type RetryState struct {
	// Attempts counts failed attempts since the channel was last Online or
	// the backoff was cleared.
	Attempts    int        `json:"attempts"`
	NextRetryAt *time.Time `json:"nextRetryAt,omitempty"`
	LastError   string     `json:"lastError,omitempty"`
	LastErrorAt *time.Time `json:"lastErrorAt,omitempty"`
}

// HasCredentials reports whether source credentials are stored.
func (c *Channel) HasCredentials() bool { return c.SealedCredentials != "" }

// MaskedSourceURL is the source URL as callers see it: "***@" stands where
// userinfo credentials are stored and "name=***" where a user or password
// parameter is, so a caller sending it back keeps them.
func (c *Channel) MaskedSourceURL() string {
	return credurl.Masked(c.SourceURL, c.HasCredentials() && !c.CredentialsOnlyInParams)
}

// Running reports whether the channel is, or is meant to be, streaming;
// such a channel cannot be deleted, disabled or renamed on the media path.
func (c *Channel) Running() bool {
	if c.DesiredState == DesiredRunning {
		return true
	}
	switch c.ActualState {
	case ActualStarting, ActualOnline, ActualRetrying:
		return true
	}
	return false
}

// Input is what create and update accept. Nil fields keep their value on
// update and take their default on create.
type Input struct {
	Name            *string
	Description     *string
	Protocol        *Protocol
	SourceURL       *string
	RTSPTransport   *RTSPTransport
	Vhost           *string
	App             *string
	Stream          *string
	MediaServerID   *string
	DeviceID        *string
	DeviceChannelID *string
	GroupKey        *GroupKey
	Enabled         *bool
	AutoVideo       *bool
	AutoRecord      *bool
	HasAudio        *bool
	NoPlayerBreak   *bool
	HasPTZ          *bool
	IsShareChannel  *bool
	// AllowBasicAuthOverPlainRTSP: see Config.
	AllowBasicAuthOverPlainRTSP *bool
	// Activation on create; default Active.
	Activation *Activation
}

var (
	// App and stream names end up in URLs, file paths and engine keys, so
	// they keep to a conservative set with no slashes.
	pathNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	vhostRe    = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	// Ids of other records: media servers, devices, groups.
	refIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`)
	// GB28181 device and channel codes are 20 decimal digits (GB/T 28181 annex).
	gbCodeRe = regexp.MustCompile(`^[0-9]{20}$`)
	groupRe  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
)

// checkText validates a human-readable field: trimmed length bounds and no
// control characters.
func checkText(field, v string, minLen, maxLen int) error {
	n := utf8.RuneCountInString(strings.TrimSpace(v))
	if n < minLen || utf8.RuneCountInString(v) > maxLen {
		if minLen > 0 {
			return fmt.Errorf("%w: %s must be %d-%d characters", ErrInvalid, field, minLen, maxLen)
		}
		return fmt.Errorf("%w: %s must be at most %d characters", ErrInvalid, field, maxLen)
	}
	if !utf8.ValidString(v) || strings.IndexFunc(v, unicode.IsControl) >= 0 {
		return fmt.Errorf("%w: %s must not contain control characters", ErrInvalid, field)
	}
	return nil
}

func checkRef(field, v string, optional bool) error {
	if v == "" && optional {
		return nil
	}
	if !refIDRe.MatchString(v) {
		return fmt.Errorf("%w: %s must be 1-128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit", ErrInvalid, field)
	}
	return nil
}

// validate checks a channel after defaults and changes are applied; the
// source URL has already been split (it holds no credentials).
func (c *Channel) validate() error {
	if err := checkText("name", c.Name, 1, 128); err != nil {
		return err
	}
	if err := checkText("description", c.Description, 0, 1024); err != nil {
		return err
	}
	if !vhostRe.MatchString(c.Vhost) {
		return fmt.Errorf("%w: vhost must be 1-128 letters, digits, '.', '_' or '-'", ErrInvalid)
	}
	if !pathNameRe.MatchString(c.App) {
		return fmt.Errorf("%w: app must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", ErrInvalid)
	}
	if !pathNameRe.MatchString(c.Stream) {
		return fmt.Errorf("%w: stream must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", ErrInvalid)
	}
	switch c.RTSPTransport {
	case TransportAuto, TransportTCP, TransportUDP:
	default:
		return fmt.Errorf("%w: rtspTransport must be auto, tcp or udp", ErrInvalid)
	}
	if err := checkRef("mediaServerId", c.MediaServerID, true); err != nil {
		return err
	}
	if c.GroupKey != "" && !groupRe.MatchString(string(c.GroupKey)) {
		return fmt.Errorf("%w: groupKey must be 1-64 letters, digits, '.', '_' or '-'", ErrInvalid)
	}
	switch c.Activation {
	case ActivationActive, ActivationPending:
	default:
		return fmt.Errorf("%w: activationState must be Active or Pending", ErrInvalid)
	}
	switch c.Protocol {
	case ProtocolRTSP:
		if c.SourceURL == "" {
			return fmt.Errorf("%w: sourceUrl is required for protocol rtsp", ErrInvalid)
		}
		if err := checkSourceScheme(c.SourceURL, "rtsp", "rtsps"); err != nil {
			return err
		}
		if err := checkRef("deviceId", c.DeviceID, true); err != nil {
			return err
		}
		if err := checkRef("deviceChannelId", c.DeviceChannelID, true); err != nil {
			return err
		}
		if c.HasPTZ {
			return fmt.Errorf("%w: hasPtz cannot be true for protocol rtsp; RTSP carries no PTZ control (use onvif)", ErrInvalid)
		}
	case ProtocolONVIF:
		// The source is the ONVIF device service address or a stream URI
		// already resolved from it.
		if c.SourceURL != "" {
			if err := checkSourceScheme(c.SourceURL, "rtsp", "rtsps", "http", "https"); err != nil {
				return err
			}
		}
		if c.DeviceID == "" && c.SourceURL == "" {
			return fmt.Errorf("%w: protocol onvif needs a deviceId or a sourceUrl", ErrInvalid)
		}
		if err := checkRef("deviceId", c.DeviceID, true); err != nil {
			return err
		}
		if err := checkRef("deviceChannelId", c.DeviceChannelID, true); err != nil {
			return err
		}
	case ProtocolGB28181:
		if c.SourceURL != "" {
			return fmt.Errorf("%w: sourceUrl must be empty for protocol gb28181; the device sends its media after a SIP INVITE", ErrInvalid)
		}
		if !gbCodeRe.MatchString(c.DeviceID) {
			return fmt.Errorf("%w: deviceId must be the device's 20-digit GB28181 code", ErrInvalid)
		}
		if !gbCodeRe.MatchString(c.DeviceChannelID) {
			return fmt.Errorf("%w: deviceChannelId must be the channel's 20-digit GB28181 code", ErrInvalid)
		}
	default:
		return fmt.Errorf("%w: protocol must be rtsp, onvif or gb28181", ErrInvalid)
	}
	return nil
}
