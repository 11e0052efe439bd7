// Package mediaserver acts on media servers through their node agents: it
// picks the media host an operation names (or the only one), refuses when
// its agent is not online, runs the action as a node command, waits a
// bounded time for the outcome and decodes it. It also counts what refers
// to a media server and retires one. It knows nothing of HTTP.
package mediaserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/nodecommand"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/shared/agentapi"
)

// Sentinel errors, mapped to contract codes at the boundary.
var (
	// ErrAgentUnavailable: the host's agent is not online, so nothing is
	// queued for it.
	ErrAgentUnavailable = fault.New(fault.Conflict, "agent_unavailable", "the node agent is not online")
	// ErrAgentTimeout: a read did not come back within the wait.
	ErrAgentTimeout = fault.NewRetryable(fault.Unavailable, "agent_timeout", "the node agent did not answer in time")
	// ErrReferenced refuses a retirement that would cut blocking references.
	ErrReferenced = fault.New(fault.Conflict, "media_server_referenced", "the media server is still referenced")
)

// CommandError is a command that ended without success, with the agent's
// error code (agentapi.Code*) or timed_out / canceled.
type CommandError struct {
	CommandID, Status, Code, Message string
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("node command %s %s: %s: %s", e.CommandID, e.Status, e.Code, e.Message)
}

// Kind classes the agent's answer (see fault.Coded), from its contract
// code.
func (e *CommandError) Kind() fault.Kind {
	switch e.ErrorCode() {
	case "invalid_body", agentapi.CodeFallbackRootOverlaps:
		return fault.Invalid
	case "not_found":
		return fault.NotFound
	case "agent_timeout":
		return fault.Unavailable
	}
	return fault.Conflict
}

// ErrorCode is the contract code of the agent's answer.
func (e *CommandError) ErrorCode() string {
	switch e.Code {
	case agentapi.CodeInvalid:
		return "invalid_body"
	case agentapi.CodeNotFound:
		return "not_found"
	case "timed_out":
		return "agent_timeout"
	case "canceled":
		return "command_canceled"
	case agentapi.CodeConflict:
		return "conflict"
	case agentapi.CodeRTPPortsExhausted:
		return "rtp_ports_exhausted"
	case agentapi.CodeNotPermitted:
		return "not_permitted"
	case agentapi.CodeFallbackRootOverlaps:
		return "recording_fallback_root_overlaps"
	case agentapi.CodeInterrupted:
		return "command_interrupted"
	}
	return "agent_command_failed"
}

// Retryable: only an agent that did not answer in time may answer later.
func (e *CommandError) Retryable() bool { return e.ErrorCode() == "agent_timeout" }

// ReadWait bounds how long reads and plans wait for the agent.
const ReadWait = 15 * time.Second

// Service runs actions on media hosts.
type Service struct {
	Nodes    *nodes.Service
	Commands *nodecommand.Service
	Presence *nodes.Presence
	// Templates counts transcoder templates scoped to a media server, for
	// the references; nil counts none.
	Templates func(ctx context.Context, mediaServerID string) ([]string, error)
}

// Target names a media host: by node id, by media server id, or neither
// when there is exactly one.
type Target struct{ NodeID, MediaServerID string }

// Call is one action on a media host.
type Call struct {
	Target
	Type    string
	Payload any
	Reason  string
	Actor   audit.Actor
	// Wait bounds the wait for the outcome of a change (0 answers at once);
	// reads always wait up to ReadWait.
	Wait time.Duration
	// Read marks an action that changes nothing: when it does not finish in
	// time it is canceled and ErrAgentTimeout returned.
	Read bool
}

// Outcome is where a call ended up.
type Outcome struct {
	Node    *nodes.Record
	Command *nodecommand.Record
	// Done is false when the wait passed first; the command goes on.
	Done bool
}

// Online resolves a target whose agent must be online.
func (s *Service) Online(ctx context.Context, t Target) (*nodes.Record, error) {
	rec, err := s.Nodes.Resolve(ctx, t.NodeID, t.MediaServerID)
	if err != nil {
		return nil, err
	}
	switch rec.Status {
	case nodes.StatusOnline:
		return rec, nil
	case nodes.StatusRetired:
		return nil, fmt.Errorf("%w: %q", nodes.ErrRetired, rec.NodeID)
	}
	return nil, fmt.Errorf("%w: node %q is %s", ErrAgentUnavailable, rec.NodeID, rec.Status)
}

// Do runs a call and decodes a successful result into out (when not nil).
func (s *Service) Do(ctx context.Context, c Call, out any) (Outcome, error) {
	rec, err := s.Online(ctx, c.Target)
	if err != nil {
		return Outcome{}, err
	}
	var payload json.RawMessage
	if c.Payload != nil {
		if payload, err = json.Marshal(c.Payload); err != nil {
			return Outcome{}, err
		}
	}
	wait := c.Wait
	if c.Read {
		wait = ReadWait
	}
	cmd, _, err := s.Commands.CreateAndWait(ctx, nodecommand.CreateRequest{NodeID: rec.NodeID, EngineNodeID: rec.NodeID, Type: c.Type,
		Payload: payload, Reason: c.Reason, Actor: c.Actor, Timeout: max(2*wait, time.Minute), Guards: nodes.ActiveGuards(rec.NodeID)}, wait)
	if errors.Is(err, nodecommand.ErrGuard) {
		err = fmt.Errorf("%w: %q", nodes.ErrRetired, rec.NodeID)
	}
	if err != nil {
		return Outcome{}, err
	}
	o := Outcome{Node: rec, Command: cmd}
	if !nodecommand.Terminal(o.Command.Status) {
		if c.Read {
			// Nobody will look at a late answer to a read.
			s.Commands.Cancel(context.WithoutCancel(ctx), c.Actor, cmd.CommandID, "the caller stopped waiting")
			return o, fmt.Errorf("%w: %s after %s (command %s)", ErrAgentTimeout, c.Type, wait, cmd.CommandID)
		}
		return o, nil
	}
	o.Done = true
	if o.Command.Status != nodecommand.Succeeded {
		ce := &CommandError{CommandID: cmd.CommandID, Status: o.Command.Status, Code: "failed"}
		if o.Command.Error != nil {
			ce.Code, ce.Message = o.Command.Error.Code, o.Command.Error.Message
		}
		return o, ce
	}
	if out != nil && len(o.Command.Result) > 0 {
		if err := json.Unmarshal(o.Command.Result, out); err != nil {
			return o, fmt.Errorf("node command %s: result: %w", cmd.CommandID, err)
		}
	}
	return o, nil
}
