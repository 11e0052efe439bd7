package httpapi

import (
	"context"
	"time"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/mediaserver"
)

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
