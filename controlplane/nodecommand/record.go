// Package nodecommand is the node command queue (DESIGN.md section 5):
// every action on a media host is a command stored in the replicated
// store, Pending -> Dispatched -> Running -> Succeeded | Failed | TimedOut |
// Canceled. Agents long-poll for their node's commands on any control
// node; a claim, an acknowledgement and a result are each one Txn that
// compares the record it read. A command handed to an agent carries a
// visibility deadline: if the agent does not acknowledge or finish in time,
// the leader hands it out again, and the idempotency key lets the agent
// recognise a command it already ran.
package nodecommand

import (
	"encoding/json"
	"time"

	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// Key prefixes of the package.
const (
	Prefix = "/nodes/commands/"
	// keyPrefix holds one entry per (node, idempotency key), so creating a
	// command twice with one key is a compare, not a race.
	keyPrefix = "/nodes/command-keys/"
)

// ID names a node command.
type ID string

// Statuses of a node command. Append only.
const (
	Pending    = "Pending"
	Dispatched = "Dispatched"
	Running    = "Running"
	Succeeded  = "Succeeded"
	Failed     = "Failed"
	TimedOut   = "TimedOut"
	Canceled   = "Canceled"
)

// Statuses lists every status in lifecycle order.
var Statuses = []string{Pending, Dispatched, Running, Succeeded, Failed, TimedOut, Canceled}

// Terminal reports whether a status is final.
func Terminal(status string) bool {
	switch status {
	case Succeeded, Failed, TimedOut, Canceled:
		return true
	}
	return false
}

// Sentinel errors, mapped to contract codes at the boundaries.
var (
	ErrInvalid  = fault.New(fault.Invalid, "invalid_body", "invalid node command")
	ErrNotFound = fault.New(fault.NotFound, "not_found", "no such node command")
	// ErrInvalidQuery: a listing's filters are out of range.
	ErrInvalidQuery = fault.New(fault.Invalid, "invalid_query", "invalid node command query")
	// ErrNotHeld answers an agent that reports on a command that is no
	// longer its to finish (canceled, finished, or another node's).
	ErrNotHeld = fault.New(fault.Conflict, "conflict", "the command is not held by this agent")
	// ErrFinished refuses to cancel a command that already ended.
	ErrFinished = fault.New(fault.Conflict, "conflict", "the command has already finished")
	// ErrGuard means a guard of the creation did not hold.
	ErrGuard = fault.New(fault.Conflict, "conflict", "the command's preconditions do not hold")
)

// Limits of stored command data.
const (
	MaxPayloadBytes = 64 << 10
	MaxResultBytes  = 256 << 10
	maxHistory      = 32
)

// Index declares the typed columns the queue, the reaper and the listing's
// order use. Every indexed column gets a b-tree that each write of a
// command updates, so only these have one.
var Index = query.Index{Name: "node_commands", Prefix: Prefix, Columns: []query.Column{
	{Name: "node_id", Type: "TEXT", Path: "$.nodeId"},
	{Name: "status", Type: "TEXT", Path: "$.status"},
	{Name: "created_ms", Type: "INTEGER", Path: "$.createdAtMs"},
	{Name: "visible_until_ms", Type: "INTEGER", Path: "$.visibleUntilMs"},
	{Name: "expires_ms", Type: "INTEGER", Path: "$.expiresAtMs"},
	// The listing's other filters and statistics: kept in the index row
	// without a b-tree each, so a write pays for none of them.
	{Name: "engine_node_id", Type: "TEXT", Path: "$.engineNodeId", NoIndex: true},
	{Name: "command_type", Type: "TEXT", Path: "$.commandType", NoIndex: true},
	{Name: "requested_by", Type: "TEXT", Path: "$.requestedBy", NoIndex: true},
	{Name: "created_via", Type: "TEXT", Path: "$.createdVia", NoIndex: true},
	{Name: "dispatched_via", Type: "TEXT", Path: "$.dispatchedVia", NoIndex: true},
	{Name: "reason", Type: "TEXT", Path: "$.reason", NoIndex: true},
	{Name: "error_message", Type: "TEXT", Path: "$.error.message", NoIndex: true},
	{Name: "finished_ms", Type: "INTEGER", Path: "$.finishedAtMs", NoIndex: true},
}}

// Record is one stored node command.
type Record struct {
	CommandID    string `json:"commandId"`
	NodeID       string `json:"nodeId"`
	EngineNodeID string `json:"engineNodeId"`
	CommandType  string `json:"commandType"`
	// Payload is the command's input (JSON object). It holds no secret:
	// a URL's credentials are sealed into SealedSecret (see sealURL).
	Payload json.RawMessage `json:"payload,omitempty"`
	// SealedSecret is the full URL of a payload whose credentials were
	// taken out, sealed with the cluster keyring for this command and
	// node; only the node's agent gets it opened, while running it.
	SealedSecret   string `json:"sealedSecret,omitempty"`
	Status         string `json:"status"`
	IdempotencyKey string `json:"idempotencyKey"`
	RequestedBy    string `json:"requestedBy"`
	Reason         string `json:"reason,omitempty"`
	// Attempt counts deliveries; MaxAttempts bounds them.
	Attempt     int `json:"attempt"`
	MaxAttempts int `json:"maxAttempts"`
	// Visibility is how long a delivery stays with its agent without news.
	Visibility time.Duration `json:"visibility"`

	CreatedAt      time.Time  `json:"createdAt"`
	CreatedAtMs    int64      `json:"createdAtMs"`
	CreatedVia     string     `json:"createdVia"`
	DispatchedAt   *time.Time `json:"dispatchedAt,omitempty"`
	DispatchedVia  string     `json:"dispatchedVia,omitempty"`
	StartedAt      *time.Time `json:"startedAt,omitempty"`
	FinishedAt     *time.Time `json:"finishedAt,omitempty"`
	FinishedAtMs   int64      `json:"finishedAtMs,omitempty"`
	VisibleUntil   *time.Time `json:"visibleUntil,omitempty"`
	VisibleUntilMs int64      `json:"visibleUntilMs"`
	ExpiresAt      time.Time  `json:"expiresAt"`
	ExpiresAtMs    int64      `json:"expiresAtMs"`

	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
	// Replayed is set when the agent answered from its memory of an
	// earlier delivery instead of running the command again.
	Replayed bool         `json:"replayed,omitempty"`
	History  []Transition `json:"history"`
}

// Error is a failed command's error.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Transition is one entry of a command's history.
type Transition struct {
	Status  string    `json:"status"`
	At      time.Time `json:"at"`
	Attempt int       `json:"attempt"`
	Via     string    `json:"via,omitempty"`
	Message string    `json:"message,omitempty"`
}

func (r *Record) transition(status string, at time.Time, via, msg string) {
	r.Status = status
	r.History = append(r.History, Transition{Status: status, At: at, Attempt: r.Attempt, Via: via, Message: msg})
	if len(r.History) > maxHistory {
		r.History = append(r.History[:1], r.History[len(r.History)-maxHistory+1:]...)
	}
}

// finish stamps the end of a command.
func (r *Record) finish(at time.Time) {
	r.FinishedAt, r.FinishedAtMs = &at, at.UnixMilli()
	r.release()
}

func (r *Record) hold(until time.Time) {
	r.VisibleUntil, r.VisibleUntilMs = &until, until.UnixMilli()
}

func (r *Record) release() {
	r.VisibleUntil, r.VisibleUntilMs = nil, 0
}

func recordKey(id string) string { return Prefix + id }

// agentKey is the idempotency key the agent remembers: a caller's key and
// a command's own id live in separate spaces.
func (r *Record) agentKey() string {
	if r.IdempotencyKey == r.CommandID {
		return "cmd:" + r.CommandID
	}
	return "caller:" + r.IdempotencyKey
}
