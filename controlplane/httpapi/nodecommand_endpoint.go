package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/identity"
	"github.com/svcplatform/svc/controlplane/nodecommand"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/shared/agentapi"
)

// nodeCommandEndpoints serves the node command queue.
type nodeCommandEndpoints struct {
	commands *nodecommand.Service
	nodes    *nodes.Service
}

func toNodeCommand(r *nodecommand.Record) contract.NodeCommand {
	c := contract.NodeCommand{CommandId: r.CommandID, NodeId: r.NodeID, EngineNodeId: r.EngineNodeID, CommandType: r.CommandType,
		Status: contract.NodeCommandStatus(r.Status), IdempotencyKey: r.IdempotencyKey, RequestedBy: r.RequestedBy, Reason: r.Reason,
		Attempt: int32(r.Attempt), MaxAttempts: int32(r.MaxAttempts), CreatedAt: r.CreatedAt, CreatedVia: r.CreatedVia,
		DispatchedAt: r.DispatchedAt, DispatchedVia: r.DispatchedVia, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
		VisibleUntil: r.VisibleUntil, ExpiresAt: r.ExpiresAt, Replayed: r.Replayed}
	if r.Error != nil {
		c.Error = &contract.NodeCommandError{Code: r.Error.Code, Message: r.Error.Message}
	}
	return c
}

func toNodeCommandDetail(r *nodecommand.Record) contract.NodeCommandDetail {
	c := toNodeCommand(r)
	d := contract.NodeCommandDetail{CommandId: c.CommandId, NodeId: c.NodeId, EngineNodeId: c.EngineNodeId, CommandType: c.CommandType,
		Status: contract.NodeCommandDetailStatus(c.Status), IdempotencyKey: c.IdempotencyKey, RequestedBy: c.RequestedBy, Reason: c.Reason,
		Attempt: c.Attempt, MaxAttempts: c.MaxAttempts, CreatedAt: c.CreatedAt, CreatedVia: c.CreatedVia, DispatchedAt: c.DispatchedAt,
		DispatchedVia: c.DispatchedVia, StartedAt: c.StartedAt, FinishedAt: c.FinishedAt, VisibleUntil: c.VisibleUntil, ExpiresAt: c.ExpiresAt,
		Replayed: c.Replayed, Error: c.Error, History: []contract.NodeCommandTransition{}}
	// Payloads hold no secrets (they are sealed apart), and answers redact
	// whatever looks like one anyway: results, and older records.
	d.Payload = rawObject(nodecommand.RedactData(r.Payload))
	d.Result = rawObject(nodecommand.RedactData(r.Result))
	for _, h := range r.History {
		d.History = append(d.History, contract.NodeCommandTransition{Status: contract.NodeCommandTransitionStatus(h.Status), At: h.At,
			Attempt: int32(h.Attempt), Via: h.Via, Message: h.Message})
	}
	return d
}

// rawObject decodes stored JSON for an object-typed field (nil when empty
// or not an object).
func rawObject(raw json.RawMessage) *map[string]interface{} {
	if len(raw) == 0 {
		return nil
	}
	var m map[string]interface{}
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return &m
}

func commandFilter(nodeID, engineNodeID, status, commandType, requestedBy *string, localOnly *bool, from, to *time.Time, sinceHours *int32, keyword *string) nodecommand.Filter {
	return nodecommand.Filter{NodeID: deref(nodeID, ""), EngineNodeID: deref(engineNodeID, ""), Status: deref(status, ""),
		CommandType: deref(commandType, ""), RequestedBy: deref(requestedBy, ""), LocalOnly: deref(localOnly, false),
		From: from, To: to, SinceHours: int(deref(sinceHours, 0)), Keyword: deref(keyword, "")}
}

func strPtr[T ~string](v *T) *string {
	if v == nil {
		return nil
	}
	s := string(*v)
	return &s
}

func (e *nodeCommandEndpoints) list(ctx context.Context, f nodecommand.Filter, page, size int32) (contract.NodeCommandList, error) {
	rows, total, err := e.commands.List(ctx, f, int(page), int(size))
	if err != nil {
		return contract.NodeCommandList{}, err
	}
	out := contract.NodeCommandList{Page: page, PageSize: size, Total: total, Rows: []contract.NodeCommand{}}
	for i := range rows {
		out.Rows = append(out.Rows, toNodeCommand(&rows[i]))
	}
	return out, nil
}

func (e *nodeCommandEndpoints) ListNodeCommands(ctx context.Context, r contract.ListNodeCommandsRequestObject) (contract.ListNodeCommandsResponseObject, error) {
	ctx = requestContext(ctx)
	p := r.Params
	f := commandFilter(p.NodeId, p.EngineNodeId, strPtr(p.Status), p.CommandType, p.RequestedBy, p.LocalOnly, p.From, p.To, p.SinceHours, p.Keyword)
	out, err := e.list(ctx, f, deref(p.Page, 1), deref(p.PageSize, 50))
	return contract.ListNodeCommands200JSONResponse(out), err
}

func (e *nodeCommandEndpoints) ListLocalNodeCommands(ctx context.Context, r contract.ListLocalNodeCommandsRequestObject) (contract.ListLocalNodeCommandsResponseObject, error) {
	ctx = requestContext(ctx)
	out, err := e.list(ctx, nodecommand.Filter{Status: deref(strPtr(r.Params.Status), ""), LocalOnly: true}, deref(r.Params.Page, 1), deref(r.Params.PageSize, 50))
	return contract.ListLocalNodeCommands200JSONResponse(out), err
}

func (e *nodeCommandEndpoints) GetNodeCommandStats(ctx context.Context, r contract.GetNodeCommandStatsRequestObject) (contract.GetNodeCommandStatsResponseObject, error) {
	ctx = requestContext(ctx)
	p := r.Params
	st, err := e.commands.Stats(ctx, commandFilter(p.NodeId, p.EngineNodeId, strPtr(p.Status), p.CommandType, p.RequestedBy, p.LocalOnly, p.From, p.To, p.SinceHours, p.Keyword))
	if err != nil {
		return nil, err
	}
	return contract.GetNodeCommandStats200JSONResponse{Total: st.Total, ByStatus: st.ByStatus, ByCommandType: st.ByCommandType,
		AverageDurationMs: st.AvgDurationMs, MaxDurationMs: st.MaxDurationMs, OldestPendingAgeMs: st.OldestPendingMs}, nil
}

func (e *nodeCommandEndpoints) GetNodeCommand(ctx context.Context, r contract.GetNodeCommandRequestObject) (contract.GetNodeCommandResponseObject, error) {
	ctx = requestContext(ctx)
	rec, err := e.commands.Get(ctx, r.CommandId)
	if err != nil {
		return nil, err
	}
	return contract.GetNodeCommand200JSONResponse(toNodeCommand(rec)), nil
}

func (e *nodeCommandEndpoints) GetNodeCommandDetail(ctx context.Context, r contract.GetNodeCommandDetailRequestObject) (contract.GetNodeCommandDetailResponseObject, error) {
	ctx = requestContext(ctx)
	rec, err := e.commands.Get(ctx, r.CommandId)
	if err != nil {
		return nil, err
	}
	return contract.GetNodeCommandDetail200JSONResponse(toNodeCommandDetail(rec)), nil
}

func (e *nodeCommandEndpoints) CancelNodeCommand(ctx context.Context, r contract.CancelNodeCommandRequestObject) (contract.CancelNodeCommandResponseObject, error) {
	ctx = requestContext(ctx)
	reason := ""
	if r.Body != nil {
		reason = deref(r.Body.Reason, "")
	}
	rec, err := e.commands.Cancel(ctx, auditActor(ctx), r.CommandId, reason)
	if err != nil {
		return nil, err
	}
	return contract.CancelNodeCommand200JSONResponse(toNodeCommand(rec)), nil
}

// commandPermissions are the permissions a command type needs beyond the
// route's nodes.manage: the same as the dedicated operation that runs it,
// so the generic operation is no way around them.
var commandPermissions = map[string]string{
	agentapi.TypeEngineRawGet:     "system.config.raw.manage",
	agentapi.TypeEngineRawPlan:    "system.config.raw.manage",
	agentapi.TypeEngineRawApply:   "system.config.raw.manage",
	agentapi.TypeHostTuningPlan:   "system.host.manage",
	agentapi.TypeHostTuningApply:  "system.host.manage",
	agentapi.TypeAgentRestart:     "system.lifecycle.manage",
	agentapi.TypeCertificateRenew: "system.lifecycle.manage",
}

// CreateNodeCommand queues a command for a node that exists and is not
// retired; an offline agent gets it when it comes back, before the
// command's deadline.
func (e *nodeCommandEndpoints) CreateNodeCommand(ctx context.Context, r contract.CreateNodeCommandRequestObject) (contract.CreateNodeCommandResponseObject, error) {
	ctx = requestContext(ctx)
	if p, ok := commandPermissions[r.Body.CommandType]; ok && !identity.From(ctx).Has(p) {
		return nil, &Error{
			Status:    http.StatusForbidden,
			Code:      "permission_denied",
			Message:   fmt.Sprintf("%s commands need permission %q", r.Body.CommandType, p),
			Retryable: retryable(false),
		}
	}
	if err := nodes.ValidNodeID(r.NodeId); err != nil {
		return nil, err
	}
	b := r.Body
	var payload json.RawMessage
	if b.Payload != nil {
		var err error
		if payload, err = json.Marshal(*b.Payload); err != nil {
			return nil, err
		}
	}
	cmd, _, err := e.commands.CreateAndWait(ctx, nodecommand.CreateRequest{NodeID: r.NodeId, EngineNodeID: r.NodeId, Type: b.CommandType, Payload: payload,
		IdempotencyKey: deref(b.IdempotencyKey, ""), Reason: deref(b.Reason, ""), Timeout: time.Duration(deref(b.TimeoutSeconds, 0)) * time.Second,
		MaxAttempts: int(deref(b.MaxAttempts, 0)), Actor: auditActor(ctx), Guards: nodes.ActiveGuards(r.NodeId)}, time.Duration(deref(b.WaitSeconds, 0))*time.Second)
	if errors.Is(err, nodecommand.ErrGuard) {
		// Say why: the node is unknown or retired.
		rec, gerr := e.nodes.Get(ctx, r.NodeId)
		switch {
		case gerr != nil:
			err = gerr
		case rec.Status == nodes.StatusRetired:
			err = nodes.ErrRetired
		}
	}
	if err != nil {
		return nil, err
	}
	return contract.CreateNodeCommand200JSONResponse(toNodeCommand(cmd)), nil
}
