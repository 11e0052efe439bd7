package mediaserver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/nodecommand"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/shared/agentapi"
)

// OperationPrefix holds the operator-facing record of each lifecycle
// operation; keys are UUIDv7, so key order is time order.
const OperationPrefix = "/nodes/lifecycle-operations/"

// LifecycleOperations maps each operation to the node command it runs.
var LifecycleOperations = map[string]string{
	"engine-start":      agentapi.TypeEngineStart,
	"engine-stop":       agentapi.TypeEngineStop,
	"engine-restart":    agentapi.TypeEngineRestart,
	"engine-reload":     agentapi.TypeEngineReload,
	"agent-restart":     agentapi.TypeAgentRestart,
	"certificate-renew": agentapi.TypeCertificateRenew,
}

// Operation is a lifecycle operation with the state of its command.
type Operation struct {
	OperationID string    `json:"operationId"`
	NodeID      string    `json:"nodeId"`
	Operation   string    `json:"operation"`
	Reason      string    `json:"reason"`
	RequestedBy string    `json:"requestedBy"`
	CreatedAt   time.Time `json:"createdAt"`
	CommandID   string    `json:"commandId"`
	// Filled from the command when read.
	Status     string     `json:"-"`
	FinishedAt *time.Time `json:"-"`
	Message    string     `json:"-"`
}

// StartOperation runs a lifecycle operation on an online media host and
// records it for operators.
func (s *Service) StartOperation(ctx context.Context, actor audit.Actor, nodeID, operation, reason string) (*Operation, error) {
	typ, ok := LifecycleOperations[operation]
	if !ok {
		return nil, fmt.Errorf("%w: unknown lifecycle operation %q", nodes.ErrInvalid, operation)
	}
	if err := nodes.ValidNodeID(nodeID); err != nil {
		return nil, err
	}
	o, err := s.Do(ctx, Call{Target: Target{NodeID: nodeID}, Type: typ, Reason: reason, Actor: actor}, nil)
	if err != nil {
		return nil, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	op := &Operation{OperationID: id.String(), NodeID: nodeID, Operation: operation, Reason: reason, RequestedBy: actor.Type + ":" + actor.ID,
		CreatedAt: time.Now().UTC(), CommandID: o.Command.CommandID}
	val, _ := json.Marshal(op)
	auditOp, err := actor.Success("node.lifecycle."+operation, "node:"+nodeID, reason)
	if err != nil {
		return nil, err
	}
	if _, err := s.Nodes.Store.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Put(OperationPrefix+op.OperationID, val), auditOp}}); err != nil {
		return nil, fmt.Errorf("command %s is queued but its operation record was not written: %w", o.Command.CommandID, err)
	}
	s.fillOperation(op, o.Command)
	return op, nil
}

func (s *Service) fillOperation(op *Operation, cmd *nodecommand.Record) {
	if cmd == nil {
		op.Status, op.Message = nodecommand.Canceled, "its node command no longer exists"
		return
	}
	op.Status, op.FinishedAt = cmd.Status, cmd.FinishedAt
	switch {
	case cmd.Error != nil:
		op.Message = cmd.Error.Message
	case cmd.Status == nodecommand.Succeeded:
		op.Message = "done"
	default:
		op.Message = "in progress"
	}
}

// Operations lists lifecycle operations newest first.
func (s *Service) Operations(ctx context.Context, nodeID string, limit int) ([]*Operation, error) {
	resp, err := s.Nodes.Store.Range(ctx, OperationPrefix, store.RangeOptions{End: store.PrefixEnd(OperationPrefix)})
	if err != nil {
		return nil, err
	}
	var out []*Operation
	for i := len(resp.KVs) - 1; i >= 0 && len(out) < limit; i-- {
		op, err := store.Decode[Operation](resp.KVs[i])
		if err != nil {
			return nil, err
		}
		if nodeID != "" && op.NodeID != nodeID {
			continue
		}
		cmd, err := s.Commands.Get(ctx, op.CommandID)
		if err != nil {
			cmd = nil
		}
		s.fillOperation(&op, cmd)
		out = append(out, &op)
	}
	return out, nil
}
