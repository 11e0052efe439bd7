package httpapi

import (
	"context"
	"net/http"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/rtpports"
	"github.com/svcplatform/svc/shared/agentapi"
)

// rtpEndpoints serves RTP port leases (controlplane/rtpports asks the
// host's agent, which owns its range).
type rtpEndpoints struct {
	ports *rtpports.Service
}

// leaseAnswer maps a lease change: the lease, or the command still running.
func leaseAnswer(c rtpports.Change) (contract.RtpPortLeaseAnswer, error) {
	var out contract.RtpPortLeaseAnswer
	if !c.Outcome.Done {
		return out, out.FromNodeCommandAccepted(accepted(c.Outcome))
	}
	return out, out.FromRtpPortLease(rtpLease(c.Lease))
}

func rtpLease(l agentapi.Lease) contract.RtpPortLease {
	return contract.RtpPortLease{LeaseId: l.LeaseID, NodeId: l.NodeID, Port: int32(l.Port), Direction: contract.RtpPortLeaseDirection(l.Direction),
		Purpose: l.Purpose, Ssrc: l.SSRC, StreamId: l.StreamID, Status: contract.RtpPortLeaseStatus(l.Status), CreatedAt: l.CreatedAt,
		ExpiresAt: l.ExpiresAt, ReleasedAt: l.ReleasedAt, ReleaseReason: l.ReleaseReason}
}

func (e *rtpEndpoints) ListRtpPortLeases(ctx context.Context, r contract.ListRtpPortLeasesRequestObject) (contract.ListRtpPortLeasesResponseObject, error) {
	ctx = requestContext(ctx)
	nodeID, list, err := e.ports.List(ctx, auditActor(ctx), target(r.Params.NodeId, r.Params.MediaServerId),
		agentapi.ListLeasesRequest{Status: deref(strPtr(r.Params.Status), ""), Direction: deref(strPtr(r.Params.Direction), "")})
	if err != nil {
		return nil, err
	}
	out := contract.RtpPortLeaseList{NodeId: nodeID, PortMin: int32(list.PortMin), PortMax: int32(list.PortMax), Rows: make([]contract.RtpPortLease, 0, len(list.Leases))}
	for _, l := range list.Leases {
		out.Rows = append(out.Rows, rtpLease(l))
	}
	return contract.ListRtpPortLeases200JSONResponse(out), nil
}

func (e *rtpEndpoints) CreateRtpPortLease(ctx context.Context, r contract.CreateRtpPortLeaseRequestObject) (contract.CreateRtpPortLeaseResponseObject, error) {
	ctx = requestContext(ctx)
	b := r.Body
	req := agentapi.LeaseRequest{Direction: string(b.Direction), Purpose: b.Purpose, SSRC: deref(b.Ssrc, ""), StreamID: deref(b.StreamId, ""),
		TTLSeconds: int(deref(b.TtlSeconds, 300)), Port: int(deref(b.Port, 0))}
	c, err := e.ports.Lease(ctx, auditActor(ctx), target(r.Params.NodeId, r.Params.MediaServerId), req, waitFor(b.WaitSeconds))
	if err != nil {
		return nil, err
	}
	out, err := leaseAnswer(c)
	if err != nil {
		return nil, err
	}
	return contract.CreateRtpPortLease200JSONResponse(out), nil
}

func releaseBody(b *contract.RtpPortReleaseRequest) (string, *int32) {
	if b == nil {
		return "", nil
	}
	return deref(b.Reason, ""), b.WaitSeconds
}

func (e *rtpEndpoints) ReleaseRtpPortLease(ctx context.Context, r contract.ReleaseRtpPortLeaseRequestObject) (contract.ReleaseRtpPortLeaseResponseObject, error) {
	ctx = requestContext(ctx)
	reason, wait := releaseBody(r.Body)
	c, err := e.ports.Release(ctx, auditActor(ctx), target(r.Params.NodeId, r.Params.MediaServerId), agentapi.ReleaseRequest{LeaseID: r.LeaseId, Reason: reason}, waitFor(wait))
	if err != nil {
		return nil, err
	}
	out, err := leaseAnswer(c)
	if err != nil {
		return nil, err
	}
	return contract.ReleaseRtpPortLease200JSONResponse(out), nil
}

func (e *rtpEndpoints) ReleaseRtpPort(ctx context.Context, r contract.ReleaseRtpPortRequestObject) (contract.ReleaseRtpPortResponseObject, error) {
	ctx = requestContext(ctx)
	if r.Port < 1 || r.Port > 65535 {
		return nil, &Error{Status: http.StatusBadRequest, Code: "invalid_query", Message: "port must be within 1..65535", Retryable: retryable(false)}
	}
	reason, wait := releaseBody(r.Body)
	req := agentapi.ReleaseRequest{Port: int(r.Port), Direction: deref(strPtr(r.Params.Direction), ""), Reason: reason}
	c, err := e.ports.Release(ctx, auditActor(ctx), target(r.Params.NodeId, r.Params.MediaServerId), req, waitFor(wait))
	if err != nil {
		return nil, err
	}
	out, err := leaseAnswer(c)
	if err != nil {
		return nil, err
	}
	return contract.ReleaseRtpPort200JSONResponse(out), nil
}
