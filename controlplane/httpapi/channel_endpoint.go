package httpapi

import (
	"context"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/gb28181"
	"github.com/svcplatform/svc/controlplane/store"
)

// channelEndpoints serves the channel catalogue (module 05) and the
// third-party channel operations (module 11), which share its domain calls.
type channelEndpoints struct {
	channels *channels.Service
	// gb sends PTZ commands to GB28181 channels' devices; nil when the node
	// runs no SIP server.
	gb *gb28181.Service
	// store holds the channels' PTZ settings.
	store store.Store
}

// toChannel is the only way a channel leaves the API: the source URL is
// masked and the sealed credentials stay behind.
func toChannel(c *channels.Channel) contract.Channel {
	out := contract.Channel{
		ChannelId: string(c.ChannelID), Name: c.Name, Description: c.Description, Protocol: contract.ChannelProtocol(c.Protocol),
		SourceUrl: c.MaskedSourceURL(), HasSourceCredentials: c.HasCredentials(), RtspTransport: contract.ChannelRtspTransport(c.RTSPTransport),
		Vhost: c.Vhost, App: c.App, Stream: c.Stream, StreamId: c.Stream, MediaServerId: c.MediaServerID, NodeId: c.NodeID,
		DeviceId: c.DeviceID, DeviceChannelId: c.DeviceChannelID, GroupKey: string(c.GroupKey), Enabled: c.Enabled,
		AutoVideo: c.AutoVideo, AutoRecord: c.AutoRecord, HasAudio: c.HasAudio, NoPlayerBreak: c.NoPlayerBreak, HasPtz: c.HasPTZ,
		IsShareChannel: c.IsShareChannel, AllowBasicAuthOverPlainRtsp: c.AllowBasicAuthOverPlainRTSP,
		ActivationState: contract.ChannelActivationState(c.Activation),
		DesiredState:    contract.ChannelDesiredState(c.DesiredState), ActualState: contract.ChannelActualState(c.ActualState),
		ActualStateReason: c.ActualStateReason, ActualStateAt: c.ActualStateAt, AutoRecoveryPaused: c.AutoRecoveryPaused,
		Retry: contract.ChannelRetry{Attempts: int32(c.Retry.Attempts), NextRetryAt: c.Retry.NextRetryAt,
			LastErrorAt: c.Retry.LastErrorAt},
		CreatedAt: c.CreatedAt, CreatedBy: c.CreatedBy, UpdatedAt: c.UpdatedAt, UpdatedBy: c.UpdatedBy,
	}
	if c.Retry.LastError != "" {
		out.Retry.LastError = &c.Retry.LastError
	}
	if c.LastCommandID != "" {
		id := string(c.LastCommandID)
		out.LastCommandId = &id
	}
	return out
}

func toStreamCommand(c *channels.StreamCommand) contract.StreamCommand {
	out := contract.StreamCommand{CommandId: string(c.CommandID), ChannelId: string(c.ChannelID), Action: contract.StreamCommandAction(c.Action),
		State: contract.StreamCommandState(c.State), RequestedBy: c.RequestedBy, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, FinishedAt: c.FinishedAt}
	if c.NodeCommandID != "" {
		out.NodeCommandId = &c.NodeCommandID
	}
	if c.MediaServerID != "" {
		out.MediaServerId = &c.MediaServerID
	}
	if c.Error != "" {
		out.Error = &c.Error
	}
	return out
}

func toChannelList(rows []channels.Channel, total int64, page, size int) contract.ChannelList {
	out := contract.ChannelList{Page: int32(page), PageSize: int32(size), Total: total, Rows: []contract.Channel{}}
	for i := range rows {
		out.Rows = append(out.Rows, toChannel(&rows[i]))
	}
	return out
}

func opt[T ~string](p *T) T {
	if p == nil {
		return ""
	}
	return *p
}

// channelFilter turns the listing's query into the domain filter.
func channelFilter(p contract.ListChannelsParams) channels.Filter {
	return channels.Filter{
		Page: int(deref(p.Page, 1)), PageSize: int(deref(p.PageSize, 50)), Keyword: deref(p.Keyword, ""),
		Protocol: channels.Protocol(opt(p.Protocol)), MediaServerID: deref(p.MediaServerId, ""), NodeID: deref(p.NodeId, ""),
		DeviceID: deref(p.DeviceId, ""), DeviceChannelID: deref(p.DeviceChannelId, ""), Vhost: deref(p.Vhost, ""),
		App: deref(p.App, ""), Stream: deref(p.Stream, ""), StreamID: deref(p.StreamId, ""), SourceURL: deref(p.SourceUrl, ""),
		GroupKey: channels.GroupKey(deref(p.GroupKey, "")), Activation: channels.Activation(opt(p.ActivationState)),
		DesiredState: channels.DesiredState(opt(p.DesiredState)), ActualState: channels.ActualState(opt(p.ActualState)),
		Enabled: p.Enabled, AutoVideo: p.AutoVideo, AutoRecord: p.AutoRecord, NoPlayerBreak: p.NoPlayerBreak,
		HasAudio: p.HasAudio, HasPTZ: p.HasPtz, IsShareChannel: p.IsShareChannel,
	}
}

func (e *channelEndpoints) list(ctx context.Context, p contract.ListChannelsParams) (contract.ChannelList, error) {
	f := channelFilter(p)
	rows, total, err := e.channels.List(requestContext(ctx), f)
	if err != nil {
		return contract.ChannelList{}, err
	}
	return toChannelList(rows, total, f.Page, f.PageSize), nil
}

func (e *channelEndpoints) ListChannels(ctx context.Context, r contract.ListChannelsRequestObject) (contract.ListChannelsResponseObject, error) {
	out, err := e.list(ctx, r.Params)
	if err != nil {
		return nil, err
	}
	return contract.ListChannels200JSONResponse(out), nil
}

func (e *channelEndpoints) ListPendingChannels(ctx context.Context, r contract.ListPendingChannelsRequestObject) (contract.ListPendingChannelsResponseObject, error) {
	pending := contract.ChannelActivationStatePending
	out, err := e.list(ctx, contract.ListChannelsParams{Page: r.Params.Page, PageSize: r.Params.PageSize, Keyword: r.Params.Keyword,
		Protocol: r.Params.Protocol, GroupKey: r.Params.GroupKey, ActivationState: &pending})
	if err != nil {
		return nil, err
	}
	return contract.ListPendingChannels200JSONResponse(out), nil
}

func typedPtr[T ~string](p *string) *T {
	if p == nil {
		return nil
	}
	v := T(*p)
	return &v
}

func enumPtr[T ~string, U ~string](p *U) *T {
	if p == nil {
		return nil
	}
	v := T(*p)
	return &v
}

func (e *channelEndpoints) CreateChannel(ctx context.Context, r contract.CreateChannelRequestObject) (contract.CreateChannelResponseObject, error) {
	b := r.Body
	protocol := channels.Protocol(b.Protocol)
	ch, err := e.channels.Create(requestContext(ctx), actor(ctx).Actor, channels.Input{
		Name: &b.Name, Description: b.Description, Protocol: &protocol, SourceURL: b.SourceUrl,
		RTSPTransport: enumPtr[channels.RTSPTransport](b.RtspTransport), Vhost: b.Vhost, App: &b.App, Stream: &b.Stream,
		MediaServerID: b.MediaServerId, DeviceID: b.DeviceId, DeviceChannelID: b.DeviceChannelId, GroupKey: typedPtr[channels.GroupKey](b.GroupKey),
		Enabled: b.Enabled, AutoVideo: b.AutoVideo, AutoRecord: b.AutoRecord, HasAudio: b.HasAudio, NoPlayerBreak: b.NoPlayerBreak,
		HasPTZ: b.HasPtz, IsShareChannel: b.IsShareChannel, Activation: enumPtr[channels.Activation](b.ActivationState),
		AllowBasicAuthOverPlainRTSP: b.AllowBasicAuthOverPlainRtsp,
	})
	if err != nil {
		return nil, err
	}
	return contract.CreateChannel200JSONResponse(toChannel(ch)), nil
}

func (e *channelEndpoints) GetChannel(ctx context.Context, r contract.GetChannelRequestObject) (contract.GetChannelResponseObject, error) {
	ch, err := e.channels.Get(requestContext(ctx), channels.ChannelID(r.ChannelId))
	if err != nil {
		return nil, err
	}
	return contract.GetChannel200JSONResponse(toChannel(ch)), nil
}

func (e *channelEndpoints) UpdateChannel(ctx context.Context, r contract.UpdateChannelRequestObject) (contract.UpdateChannelResponseObject, error) {
	b := r.Body
	ch, err := e.channels.Update(requestContext(ctx), actor(ctx).Actor, channels.ChannelID(r.ChannelId), channels.Input{
		Name: b.Name, Description: b.Description, Protocol: enumPtr[channels.Protocol](b.Protocol), SourceURL: b.SourceUrl,
		RTSPTransport: enumPtr[channels.RTSPTransport](b.RtspTransport), Vhost: b.Vhost, App: b.App, Stream: b.Stream,
		MediaServerID: b.MediaServerId, DeviceID: b.DeviceId, DeviceChannelID: b.DeviceChannelId, GroupKey: typedPtr[channels.GroupKey](b.GroupKey),
		Enabled: b.Enabled, AutoVideo: b.AutoVideo, AutoRecord: b.AutoRecord, HasAudio: b.HasAudio, NoPlayerBreak: b.NoPlayerBreak,
		HasPTZ: b.HasPtz, IsShareChannel: b.IsShareChannel, AllowBasicAuthOverPlainRTSP: b.AllowBasicAuthOverPlainRtsp,
	})
	if err != nil {
		return nil, err
	}
	return contract.UpdateChannel200JSONResponse(toChannel(ch)), nil
}

func (e *channelEndpoints) DeleteChannel(ctx context.Context, r contract.DeleteChannelRequestObject) (contract.DeleteChannelResponseObject, error) {
	if err := e.channels.Delete(requestContext(ctx), actor(ctx).Actor, channels.ChannelID(r.ChannelId)); err != nil {
		return nil, err
	}
	return contract.DeleteChannel200JSONResponse(done(contract.ActionResultActionDeleted, r.ChannelId, "the channel was deleted")), nil
}

func (e *channelEndpoints) ListChannelRuntimeLogs(ctx context.Context, r contract.ListChannelRuntimeLogsRequestObject) (contract.ListChannelRuntimeLogsResponseObject, error) {
	p := r.Params
	q := channels.LogQuery{Kind: channels.LogKind(opt(p.Kind)), From: p.From, To: p.To, Page: int(deref(p.Page, 1)), PageSize: int(deref(p.PageSize, 50)),
		Oldest: p.Order != nil && *p.Order == contract.ListChannelRuntimeLogsParamsOrderOldest}
	rows, total, err := e.channels.RuntimeLog(requestContext(ctx), channels.ChannelID(r.ChannelId), q)
	if err != nil {
		return nil, err
	}
	out := contract.ListChannelRuntimeLogs200JSONResponse{Page: int32(q.Page), PageSize: int32(q.PageSize), Total: total, Rows: []contract.ChannelRuntimeLogEntry{}}
	for _, l := range rows {
		entry := contract.ChannelRuntimeLogEntry{EntryId: l.EntryID, ChannelId: string(l.ChannelID), Kind: contract.ChannelRuntimeLogKind(l.Kind),
			Event: l.Event, Message: l.Message, Actor: l.Actor, OccurredAt: l.OccurredAt}
		for dst, v := range map[**string]string{&entry.From: l.From, &entry.To: l.To, &entry.CommandId: string(l.CommandID), &entry.TraceId: l.TraceID} {
			if v != "" {
				*dst = &v
			}
		}
		out.Rows = append(out.Rows, entry)
	}
	return out, nil
}
