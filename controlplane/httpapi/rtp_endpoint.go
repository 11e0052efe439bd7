package httpapi

import (
	"context"
	"net/http"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/shared/agentapi"
)

// rtpEndpoints serves RTP port leases, which each media host's agent owns
// for its range.
type rtpEndpoints struct {
	servers *mediaserver.Service
}

// lease runs a lease change; acc is set when the agent had not finished.
func (e *rtpEndpoints) lease(ctx context.Context, t mediaserver.Target, typ string, payload any, wait *int32) (*contract.RtpPortLease, *contract.NodeCommandAccepted, error) {
	var l contract.RtpPortLease
	o, err := e.servers.Do(ctx, mediaserver.Call{Target: t, Type: typ, Payload: payload, Actor: auditActor(ctx), Wait: waitFor(wait)}, &l)
	if err != nil {
		return nil, nil, err
	}
	if !o.Done {
		a := accepted(o)
		return nil, &a, nil
	}
	return &l, nil, nil
}

func (e *rtpEndpoints) ListRtpPortLeases(ctx context.Context, r contract.ListRtpPortLeasesRequestObject) (contract.ListRtpPortLeasesResponseObject, error) {
	ctx = requestContext(ctx)
	var list contract.RtpPortLeaseList
	o, err := e.servers.Do(ctx, mediaserver.Call{Target: target(r.Params.NodeId, r.Params.MediaServerId), Type: agentapi.TypeRTPList, Read: true, Actor: auditActor(ctx),
		Payload: agentapi.ListLeasesRequest{Status: deref(strPtr(r.Params.Status), ""), Direction: deref(strPtr(r.Params.Direction), "")}}, &list)
	if err != nil {
		return nil, err
	}
	list.NodeId = o.Node.NodeID
	if list.Rows == nil {
		list.Rows = []contract.RtpPortLease{}
	}
	return contract.ListRtpPortLeases200JSONResponse(list), nil
}

func (e *rtpEndpoints) CreateRtpPortLease(ctx context.Context, r contract.CreateRtpPortLeaseRequestObject) (contract.CreateRtpPortLeaseResponseObject, error) {
	ctx = requestContext(ctx)
	b := r.Body
	req := agentapi.LeaseRequest{Direction: string(b.Direction), Purpose: b.Purpose, SSRC: deref(b.Ssrc, ""), StreamID: deref(b.StreamId, ""),
		TTLSeconds: int(deref(b.TtlSeconds, 300)), Port: int(deref(b.Port, 0))}
	l, acc, err := e.lease(ctx, target(r.Params.NodeId, r.Params.MediaServerId), agentapi.TypeRTPLease, req, b.WaitSeconds)
	if err != nil {
		return nil, err
	}
	var out contract.RtpPortLeaseAnswer
	if err := answerOf(acc, out.FromNodeCommandAccepted, func() error { return out.FromRtpPortLease(*l) }); err != nil {
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
	l, acc, err := e.lease(ctx, target(r.Params.NodeId, r.Params.MediaServerId), agentapi.TypeRTPRelease, agentapi.ReleaseRequest{LeaseID: r.LeaseId, Reason: reason}, wait)
	if err != nil {
		return nil, err
	}
	var out contract.RtpPortLeaseAnswer
	if err := answerOf(acc, out.FromNodeCommandAccepted, func() error { return out.FromRtpPortLease(*l) }); err != nil {
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
	l, acc, err := e.lease(ctx, target(r.Params.NodeId, r.Params.MediaServerId), agentapi.TypeRTPRelease, req, wait)
	if err != nil {
		return nil, err
	}
	var out contract.RtpPortLeaseAnswer
	if err := answerOf(acc, out.FromNodeCommandAccepted, func() error { return out.FromRtpPortLease(*l) }); err != nil {
		return nil, err
	}
	return contract.ReleaseRtpPort200JSONResponse(out), nil
}
