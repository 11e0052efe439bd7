package httpapi

import (
	"context"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/channels"
)

// Channel groups.

func toChannelGroup(g *channels.Group) contract.ChannelGroup {
	return contract.ChannelGroup{GroupKey: string(g.GroupKey), Name: g.Name, Description: g.Description, ChannelCount: int32(g.ChannelCount),
		CreatedAt: g.CreatedAt, CreatedBy: g.CreatedBy, UpdatedAt: g.UpdatedAt, UpdatedBy: g.UpdatedBy}
}

func (e *channelEndpoints) ListChannelGroups(ctx context.Context, r contract.ListChannelGroupsRequestObject) (contract.ListChannelGroupsResponseObject, error) {
	page, size := int(deref(r.Params.Page, 1)), int(deref(r.Params.PageSize, 50))
	rows, total, err := e.channels.Groups(requestContext(ctx), deref(r.Params.Keyword, ""), page, size)
	if err != nil {
		return nil, err
	}
	out := contract.ListChannelGroups200JSONResponse{Page: int32(page), PageSize: int32(size), Total: total, Rows: []contract.ChannelGroup{}}
	for i := range rows {
		out.Rows = append(out.Rows, toChannelGroup(&rows[i]))
	}
	return out, nil
}

func (e *channelEndpoints) CreateChannelGroup(ctx context.Context, r contract.CreateChannelGroupRequestObject) (contract.CreateChannelGroupResponseObject, error) {
	g, err := e.channels.CreateGroup(requestContext(ctx), actor(ctx).Actor, channels.GroupKey(r.Body.GroupKey), r.Body.Name, deref(r.Body.Description, ""))
	if err != nil {
		return nil, err
	}
	return contract.CreateChannelGroup200JSONResponse(toChannelGroup(g)), nil
}

func (e *channelEndpoints) UpdateChannelGroup(ctx context.Context, r contract.UpdateChannelGroupRequestObject) (contract.UpdateChannelGroupResponseObject, error) {
	g, err := e.channels.UpdateGroup(requestContext(ctx), actor(ctx).Actor, channels.GroupKey(r.GroupKey), r.Body.Name, r.Body.Description)
	if err != nil {
		return nil, err
	}
	return contract.UpdateChannelGroup200JSONResponse(toChannelGroup(g)), nil
}

func (e *channelEndpoints) DeleteChannelGroup(ctx context.Context, r contract.DeleteChannelGroupRequestObject) (contract.DeleteChannelGroupResponseObject, error) {
	if err := e.channels.DeleteGroup(requestContext(ctx), actor(ctx).Actor, channels.GroupKey(r.GroupKey)); err != nil {
		return nil, err
	}
	return contract.DeleteChannelGroup200JSONResponse(done(contract.ActionResultActionDeleted, r.GroupKey, "the channel group was deleted")), nil
}
