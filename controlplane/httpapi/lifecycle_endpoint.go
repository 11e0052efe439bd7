package httpapi

import (
	"context"
	"fmt"
	"time"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/clusterca"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/shared/buildinfo"
	"github.com/svcplatform/svc/shared/pki"
)

// lifecycleEndpoints serves node agent enrollment and the lifecycle
// operations (module 01, "TLS, upgrades, lifecycle").
type lifecycleEndpoints struct {
	nodes     *nodes.Service
	presence  *nodes.Presence
	servers   *mediaserver.Service
	authority *clusterca.Authority
	agentURL  string
}

func (e *lifecycleEndpoints) CreateNodeAgentEnrollment(
	ctx context.Context,
	r contract.CreateNodeAgentEnrollmentRequestObject,
) (contract.CreateNodeAgentEnrollmentResponseObject, error) {
	ctx = requestContext(ctx)
	ttl := time.Duration(0)
	if r.Body != nil && r.Body.TtlSeconds != nil {
		ttl = time.Duration(*r.Body.TtlSeconds) * time.Second
	}
	ca, err := e.authority.CA(ctx)
	if err != nil {
		return nil, err
	}
	en, err := e.nodes.CreateEnrollment(ctx, auditActor(ctx), r.NodeId, ttl)
	if err != nil {
		return nil, err
	}
	hash := pki.Hash(ca.Cert)
	return contract.CreateNodeAgentEnrollment200JSONResponse{NodeId: en.NodeID, Code: en.Code, ExpiresAt: en.ExpiresAt, CaHash: hash, AgentServerUrl: e.agentURL,
		Command: fmt.Sprintf("svc agent enroll --server %s --code %s --ca-hash %s", e.agentURL, en.Code, hash)}, nil
}

func (e *lifecycleEndpoints) ListNodeAgents(ctx context.Context, _ contract.ListNodeAgentsRequestObject) (contract.ListNodeAgentsResponseObject, error) {
	ctx = requestContext(ctx)
	recs, err := e.nodes.List(ctx)
	if err != nil {
		return nil, err
	}
	out := contract.ListNodeAgents200JSONResponse{Rows: []contract.NodeAgent{}}
	for _, r := range recs {
		a := contract.NodeAgent{NodeId: r.NodeID, MediaServerId: r.MediaServerID, Status: contract.NodeAgentStatus(r.Status), Hostname: r.Hostname,
			AgentVersion: r.AgentVersion, ControlPlaneVersion: buildinfo.Version, VersionMatchesControlPlane: r.AgentVersion == buildinfo.Version,
			EnrolledAt: r.EnrolledAt, StatusChangedAt: r.StatusChangedAt, CertificateSerial: r.CertSerial, CertificateExpiresAt: r.CertNotAfter,
			EngineStatus: engineStatus(r), RetiredAt: r.RetiredAt}
		if hb, at, ok := e.presence.Last(r.NodeID); ok {
			a.LastHeartbeatAt, a.CanTune = &at, hb.CanTune
		}
		out.Rows = append(out.Rows, a)
	}
	return out, nil
}

// engineStatus is the record's engine process state in contract terms.
func engineStatus(r *nodes.Record) contract.NodeAgentEngineStatus {
	if r.Engine.Process == "" {
		return contract.NodeAgentEngineStatusUnknown
	}
	return contract.NodeAgentEngineStatus(r.Engine.Process)
}

func (e *lifecycleEndpoints) CreateNodeLifecycleOperation(
	ctx context.Context,
	r contract.CreateNodeLifecycleOperationRequestObject,
) (contract.CreateNodeLifecycleOperationResponseObject, error) {
	ctx = requestContext(ctx)
	op, err := e.servers.StartOperation(ctx, auditActor(ctx), r.Body.NodeId, string(r.Body.Operation), r.Body.Reason)
	if err != nil {
		return nil, err
	}
	return contract.CreateNodeLifecycleOperation200JSONResponse(toOperation(op)), nil
}

func (e *lifecycleEndpoints) ListNodeLifecycleOperations(
	ctx context.Context,
	r contract.ListNodeLifecycleOperationsRequestObject,
) (contract.ListNodeLifecycleOperationsResponseObject, error) {
	ctx = requestContext(ctx)
	ops, err := e.servers.Operations(ctx, deref(r.Params.NodeId, ""), int(deref(r.Params.Limit, 50)))
	if err != nil {
		return nil, err
	}
	out := contract.ListNodeLifecycleOperations200JSONResponse{Rows: []contract.NodeLifecycleOperation{}}
	for _, op := range ops {
		out.Rows = append(out.Rows, toOperation(op))
	}
	return out, nil
}

func toOperation(op *mediaserver.Operation) contract.NodeLifecycleOperation {
	return contract.NodeLifecycleOperation{OperationId: op.OperationID, NodeId: op.NodeID, Operation: contract.NodeLifecycleOperationOperation(op.Operation),
		Reason: op.Reason, RequestedBy: op.RequestedBy, CreatedAt: op.CreatedAt, CommandId: op.CommandID,
		Status: contract.NodeLifecycleOperationStatus(op.Status), FinishedAt: op.FinishedAt, Message: op.Message}
}
