package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/clusterca"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/controlplane/nodecommand"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/controlplane/transcoder"
	"github.com/svcplatform/svc/shared/agentapi"
)

// nodeError maps the errors of the node, command, media server and
// template packages to contract errors.
func nodeError(err error) error {
	bad := func(status int, code string, retry bool) error {
		return &Error{Status: status, Code: code, Message: err.Error(), Retryable: retryable(retry), Err: err}
	}
	var ce *mediaserver.CommandError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		switch ce.Code {
		case agentapi.CodeInvalid:
			return bad(http.StatusBadRequest, "invalid_body", false)
		case agentapi.CodeNotFound:
			return bad(http.StatusNotFound, "not_found", false)
		case "timed_out":
			return bad(http.StatusServiceUnavailable, "agent_timeout", true)
		case "canceled":
			return bad(http.StatusConflict, "command_canceled", false)
		case agentapi.CodeConflict, agentapi.CodeRTPPortsExhausted, agentapi.CodeNotPermitted, agentapi.CodeInterrupted:
			return bad(http.StatusConflict, ce.Code, false)
		}
		return bad(http.StatusConflict, "agent_command_failed", false)
	case errors.Is(err, nodes.ErrInvalid), errors.Is(err, nodecommand.ErrInvalid), errors.Is(err, transcoder.ErrInvalid):
		return bad(http.StatusBadRequest, "invalid_body", false)
	case errors.Is(err, nodes.ErrNotFound), errors.Is(err, nodecommand.ErrNotFound), errors.Is(err, transcoder.ErrNotFound):
		return bad(http.StatusNotFound, "not_found", false)
	case errors.Is(err, nodes.ErrNoMediaHosts), errors.Is(err, mediaserver.ErrAgentUnavailable), errors.Is(err, nodes.ErrNotEnrolled):
		return bad(http.StatusConflict, "agent_unavailable", false)
	case errors.Is(err, nodes.ErrAmbiguous):
		return bad(http.StatusBadRequest, "node_required", false)
	case errors.Is(err, nodes.ErrRetired):
		return bad(http.StatusConflict, "node_retired", false)
	case errors.Is(err, mediaserver.ErrReferenced):
		return bad(http.StatusConflict, "media_server_referenced", false)
	case errors.Is(err, nodecommand.ErrFinished), errors.Is(err, transcoder.ErrExists), errors.Is(err, nodecommand.ErrGuard):
		return bad(http.StatusConflict, "conflict", false)
	case errors.Is(err, mediaserver.ErrAgentTimeout):
		return bad(http.StatusServiceUnavailable, "agent_timeout", true)
	case errors.Is(err, clusterca.ErrNotReady):
		return bad(http.StatusServiceUnavailable, "unavailable", true)
	}
	return err
}

// auditActor is the caller as the audit trail records it.
func auditActor(ctx context.Context) audit.Actor { return actor(ctx).Actor }

// target reads the optional nodeId / mediaServerId query parameters.
func target(nodeID, mediaServerID *string) mediaserver.Target {
	return mediaserver.Target{NodeID: deref(nodeID, ""), MediaServerID: deref(mediaServerID, "")}
}

// waitFor turns a request's waitSeconds into the wait of a change.
func waitFor(seconds *int32) time.Duration {
	return time.Duration(deref(seconds, 15)) * time.Second
}

// accepted is the body of a change the agent has not finished within its
// wait: the node command to follow.
func accepted(o mediaserver.Outcome) contract.NodeCommandAccepted {
	return contract.NodeCommandAccepted{CommandId: o.Command.CommandID, NodeId: o.Command.NodeID, CommandType: o.Command.CommandType,
		Status:  contract.NodeCommandAcceptedStatus(o.Command.Status),
		Message: "the node agent is still working on it; follow GET /api/v2/node/commands/" + o.Command.CommandID}
}

// answerOf fills the 200 body of a change carried by a node command: the
// command to follow when the agent has not finished (acc), its result
// otherwise.
func answerOf(acc *contract.NodeCommandAccepted, fromAccepted func(contract.NodeCommandAccepted) error, fromResult func() error) error {
	if acc != nil {
		return fromAccepted(*acc)
	}
	return fromResult()
}
