// Package agentapi is the wire contract between a node agent and the
// control plane's agent port (HTTPS with mutual TLS under the cluster CA):
// enrollment, certificate renewal, long-poll delivery of node commands and
// their results, heartbeats with host and engine figures, engine process
// transitions, and the engine's hooks. Both roles import it; it imports
// neither. JSON names match the public contract's schemas, so the control
// plane passes agent results through without a second vocabulary.
package agentapi

import (
	"encoding/json"
	"time"
)

// Paths on the agent port. Every path but PathCA and PathEnroll needs the
// node's client certificate.
const (
	// PathCA answers the cluster CA certificate (PEM). An enrolling agent
	// reads it over unauthenticated TLS and trusts it only when its hash
	// matches the pin the operator gave (like kubeadm's cluster-info).
	PathCA = "/agent/v1/ca"
	// PathEnroll exchanges a one-time code and a CSR for a certificate.
	PathEnroll = "/agent/v1/enroll"
	// PathRenew exchanges a CSR for a fresh certificate of the same node.
	PathRenew = "/agent/v1/renew"
	// PathPoll long-polls the node's command queue.
	PathPoll = "/agent/v1/commands/poll"
	// PathCommandRunning acknowledges that a command started; it extends
	// the command's visibility deadline.
	PathCommandRunning = "/agent/v1/commands/running"
	// PathCommandResult reports a command's outcome.
	PathCommandResult = "/agent/v1/commands/result"
	// PathHeartbeat carries the agent's figures every few seconds.
	PathHeartbeat = "/agent/v1/heartbeat"
	// PathEngineTransition reports an engine process state change.
	PathEngineTransition = "/agent/v1/engine/transitions"
	// PathEngineHooks is the base URL the engine posts its hooks to
	// (<base>/<hookName>), authenticated by the node's certificate.
	PathEngineHooks = "/agent/v1/engine-hooks"
)

// MaxBody bounds every request body on the agent port.
const MaxBody = 1 << 20

// Error is the body of every error answer on the agent port.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error codes of the agent port.
const (
	CodeInvalid        = "invalid_body"
	CodeCodeRefused    = "enrollment_code_refused"
	CodeUnauthorized   = "authentication_required"
	CodeNodeRetired    = "node_retired"
	CodeCertSuperseded = "certificate_superseded"
	CodeNotFound       = "not_found"
	CodeConflict       = "conflict"
	CodeUnavailable    = "unavailable"
	// CodeRateLimited: too many attempts from this address (enrollment);
	// Retry-After says when to try again.
	CodeRateLimited = "rate_limited"
	// Codes of failed node commands beyond the ones above.
	CodeRTPPortsExhausted = "rtp_ports_exhausted"
	CodeNotPermitted      = "not_permitted"
	// CodeFallbackRootOverlaps: the engine configuration's
	// recording.fallbackRoot lies inside the recording root or holds it.
	CodeFallbackRootOverlaps = "recording_fallback_root_overlaps"
	// CodeInterrupted: the agent restarted while running a command whose
	// repetition is not safe, so its outcome is unknown.
	CodeInterrupted  = "command_interrupted"
	CodeEngineFailed = "engine_failed"
	CodeInternal     = "internal"
)

// EnrollRequest is sent once with the operator's one-time code.
type EnrollRequest struct {
	Code         string `json:"code"`
	CSR          string `json:"csr"` // PEM
	Hostname     string `json:"hostname"`
	AgentVersion string `json:"agentVersion"`
}

// EnrollResponse carries the node's first certificate.
type EnrollResponse struct {
	NodeID      string `json:"nodeId"`
	Certificate string `json:"certificate"` // PEM
	CA          string `json:"ca"`          // PEM
	// ServerURLs are agent port URLs of the control nodes, for failover.
	ServerURLs []string `json:"serverUrls"`
}

// RenewRequest asks for a fresh certificate for the presenting node.
type RenewRequest struct {
	CSR string `json:"csr"`
}

// RenewResponse is the renewed certificate.
type RenewResponse struct {
	Certificate string   `json:"certificate"`
	ServerURLs  []string `json:"serverUrls"`
}

// PollRequest waits up to WaitMillis for commands, returning at most Max.
type PollRequest struct {
	WaitMillis int `json:"waitMillis"`
	Max        int `json:"max"`
}

// PollResponse hands commands to the agent; each is Dispatched to it until
// VisibleUntil, after which it is handed out again unless acknowledged.
type PollResponse struct {
	Commands []Command `json:"commands"`
}

// Command is one node command as the agent receives it.
type Command struct {
	CommandID string          `json:"commandId"`
	Type      string          `json:"commandType"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	// IdempotencyKey is the same on every delivery of the command; the agent
	// remembers finished keys and does not run one twice.
	IdempotencyKey string    `json:"idempotencyKey"`
	Attempt        int       `json:"attempt"`
	VisibleUntil   time.Time `json:"visibleUntil"`
	ExpiresAt      time.Time `json:"expiresAt"`
}

// CommandRunning acknowledges a started command.
type CommandRunning struct {
	CommandID string    `json:"commandId"`
	Attempt   int       `json:"attempt"`
	StartedAt time.Time `json:"startedAt"`
}

// CommandRunningResponse tells the agent the new deadline, or that the
// command was canceled meanwhile.
type CommandRunningResponse struct {
	VisibleUntil time.Time `json:"visibleUntil"`
	Canceled     bool      `json:"canceled"`
}

// CommandResult is a command's outcome. A result for a command that is no
// longer the agent's (canceled, handed out again) is answered 409.
type CommandResult struct {
	CommandID  string          `json:"commandId"`
	Attempt    int             `json:"attempt"`
	Succeeded  bool            `json:"succeeded"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *Error          `json:"error,omitempty"`
	StartedAt  time.Time       `json:"startedAt"`
	FinishedAt time.Time       `json:"finishedAt"`
	// Replayed is set when the agent answers from its memory of an earlier
	// delivery instead of running the command again.
	Replayed bool `json:"replayed,omitempty"`
}
