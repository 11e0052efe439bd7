package httpapi

import (
	"context"

	"github.com/google/uuid"
	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/identity"
	"github.com/svcplatform/svc/controlplane/playback"
)

// playbackEndpoints serves the third-party live playback operations: one-
// time URLs and playback leases.
type playbackEndpoints struct {
	playback *playback.Service
}

func caller(ctx context.Context) playback.Caller {
	id := identity.From(requestContext(ctx))
	cred := id.CredentialID
	if id.Kind == identity.KindSession {
		cred = playback.SessionCredential + cred
	}
	return playback.Caller{TokenID: cred, Permissions: id.Permissions, ExpiresAt: id.ExpiresAt}
}

func protocolNames(in *[]contract.PlaybackProtocol) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(*in))
	for i, p := range *in {
		out[i] = string(p)
	}
	return out
}

func toSources(in []playback.Source) []contract.PlaybackSource {
	out := make([]contract.PlaybackSource, len(in))
	for i, s := range in {
		out[i] = contract.PlaybackSource{Protocol: contract.PlaybackProtocol(s.Protocol), Url: s.URL, ContentType: s.ContentType,
			BrowserNative: s.BrowserNative, Hint: s.Hint}
	}
	return out
}

func toLease(l *playback.Lease, srcs []playback.Source) contract.PlaybackLease {
	out := contract.PlaybackLease{LeaseId: uuidOf(l.LeaseID), ResourceKind: contract.PlaybackLeaseResourceKind(l.ResourceKind), ResourceId: l.ResourceID,
		State: contract.PlaybackLeaseState(l.State), CreatedAt: l.CreatedAt, ExpiresAt: l.ExpiresAt, RenewAfter: l.RenewAfter,
		AbsoluteExpiresAt: l.AbsoluteExpiresAt, RenewCount: int32(l.RenewCount), LeaseSeconds: int32(l.LeaseSeconds), Sources: toSources(srcs)}
	if l.MediaServerID != "" {
		out.MediaServerId = &l.MediaServerID
	}
	if l.EndReason != "" {
		out.EndReason = &l.EndReason
	}
	return out
}

func (e *playbackEndpoints) CreateThirdPartyLivePlayback(
	ctx context.Context,
	r contract.CreateThirdPartyLivePlaybackRequestObject,
) (contract.CreateThirdPartyLivePlaybackResponseObject, error) {
	var lifetime *int
	if r.Body.LifetimeSeconds != nil {
		v := int(*r.Body.LifetimeSeconds)
		lifetime = &v
	}
	p, err := e.playback.CreateOneTimeLinks(requestContext(ctx), caller(ctx), r.ChannelId, protocolNames(r.Body.Protocols), lifetime)
	if err != nil {
		return nil, err
	}
	return contract.CreateThirdPartyLivePlayback200JSONResponse{ChannelId: r.ChannelId, MediaServerId: p.Location.MediaServerID,
		Vhost: p.Location.Vhost, App: p.Location.App, StreamId: p.Location.Stream, StreamState: contract.ThirdPartyLivePlaybackStreamStateOnline,
		ExpiresAt: p.ExpiresAt, Sources: toSources(p.Sources)}, nil
}

func intPtr(v *int32) *int {
	if v == nil {
		return nil
	}
	i := int(*v)
	return &i
}

func (e *playbackEndpoints) CreateThirdPartyLivePlaybackLease(
	ctx context.Context,
	r contract.CreateThirdPartyLivePlaybackLeaseRequestObject,
) (contract.CreateThirdPartyLivePlaybackLeaseResponseObject, error) {
	l, srcs, err := e.playback.CreateLiveLease(requestContext(ctx), caller(ctx), r.ChannelId, playback.LeaseRequest{
		Protocols: protocolNames(r.Body.Protocols), LeaseSeconds: intPtr(r.Body.LeaseSeconds), AbsoluteLifetimeSeconds: intPtr(r.Body.AbsoluteLifetimeSeconds)})
	if err != nil {
		return nil, err
	}
	return contract.CreateThirdPartyLivePlaybackLease200JSONResponse(toLease(l, srcs)), nil
}

func (e *playbackEndpoints) CreateThirdPartyStreamPlaybackLease(
	ctx context.Context,
	r contract.CreateThirdPartyStreamPlaybackLeaseRequestObject,
) (contract.CreateThirdPartyStreamPlaybackLeaseResponseObject, error) {
	b := r.Body
	l, srcs, err := e.playback.CreateStreamLease(requestContext(ctx), caller(ctx),
		playback.StreamLocator{MediaServerID: deref(b.MediaServerId, ""), Vhost: deref(b.Vhost, ""), App: b.App, Stream: b.StreamId},
		playback.LeaseRequest{Protocols: protocolNames(b.Protocols), LeaseSeconds: intPtr(b.LeaseSeconds), AbsoluteLifetimeSeconds: intPtr(b.AbsoluteLifetimeSeconds)})
	if err != nil {
		return nil, err
	}
	return contract.CreateThirdPartyStreamPlaybackLease200JSONResponse(toLease(l, srcs)), nil
}

func (e *playbackEndpoints) GetThirdPartyPlaybackLease(
	ctx context.Context,
	r contract.GetThirdPartyPlaybackLeaseRequestObject,
) (contract.GetThirdPartyPlaybackLeaseResponseObject, error) {
	l, srcs, err := e.playback.ReadLease(requestContext(ctx), caller(ctx), r.LeaseId.String())
	if err != nil {
		return nil, err
	}
	return contract.GetThirdPartyPlaybackLease200JSONResponse(toLease(l, srcs)), nil
}

func (e *playbackEndpoints) RenewThirdPartyPlaybackLease(
	ctx context.Context,
	r contract.RenewThirdPartyPlaybackLeaseRequestObject,
) (contract.RenewThirdPartyPlaybackLeaseResponseObject, error) {
	l, srcs, err := e.playback.Renew(requestContext(ctx), caller(ctx), r.LeaseId.String(), intPtr(r.Body.LeaseSeconds))
	if err != nil {
		return nil, err
	}
	return contract.RenewThirdPartyPlaybackLease200JSONResponse(toLease(l, srcs)), nil
}

func (e *playbackEndpoints) DeleteThirdPartyPlaybackLease(
	ctx context.Context,
	r contract.DeleteThirdPartyPlaybackLeaseRequestObject,
) (contract.DeleteThirdPartyPlaybackLeaseResponseObject, error) {
	l, err := e.playback.Revoke(requestContext(ctx), caller(ctx), r.LeaseId.String(), deref(r.Params.Reason, ""), deref(r.Params.Disconnect, false))
	if err != nil {
		return nil, err
	}
	return contract.DeleteThirdPartyPlaybackLease200JSONResponse(toLease(l, nil)), nil
}

// uuidOf turns a stored id into the contract's UUID type; stored ids are
// UUIDs we minted.
func uuidOf(id string) openapi_types.UUID {
	u, _ := uuid.Parse(id)
	return u
}
