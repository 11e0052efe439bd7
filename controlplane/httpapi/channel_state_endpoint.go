package httpapi

import (
	"context"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/channels"
)

// The channel state transitions (activate, pause, retry, return to the
// pool, start, stop) and their third-party twins, which call the same
// domain functions.

func (e *channelEndpoints) start(ctx context.Context, id string) (contract.ChannelStartResult, error) {
	ch, cmd, err := e.channels.Start(requestContext(ctx), actor(ctx).Actor, channels.ChannelID(id))
	if err != nil {
		return contract.ChannelStartResult{}, err
	}
	return contract.ChannelStartResult{Channel: toChannel(ch), Command: toStreamCommand(cmd)}, nil
}

func (e *channelEndpoints) stop(ctx context.Context, id string) (contract.ChannelStopResult, error) {
	ch, cmd, err := e.channels.Stop(requestContext(ctx), actor(ctx).Actor, channels.ChannelID(id))
	if err != nil {
		return contract.ChannelStopResult{}, err
	}
	out := contract.ChannelStopResult{StreamCommandId: string(cmd.CommandID), State: contract.StreamCommandState(cmd.State), Channel: toChannel(ch)}
	if cmd.NodeCommandID != "" {
		out.NodeCommandId = &cmd.NodeCommandID
	}
	return out, nil
}

func (e *channelEndpoints) StartChannel(ctx context.Context, r contract.StartChannelRequestObject) (contract.StartChannelResponseObject, error) {
	out, err := e.start(ctx, r.ChannelId)
	if err != nil {
		return nil, err
	}
	return contract.StartChannel200JSONResponse(out), nil
}

func (e *channelEndpoints) StopChannel(ctx context.Context, r contract.StopChannelRequestObject) (contract.StopChannelResponseObject, error) {
	out, err := e.stop(ctx, r.ChannelId)
	if err != nil {
		return nil, err
	}
	return contract.StopChannel200JSONResponse(out), nil
}

func (e *channelEndpoints) RetryChannel(ctx context.Context, r contract.RetryChannelRequestObject) (contract.RetryChannelResponseObject, error) {
	ch, cmd, err := e.channels.Retry(requestContext(ctx), actor(ctx).Actor, channels.ChannelID(r.ChannelId))
	if err != nil {
		return nil, err
	}
	return contract.RetryChannel200JSONResponse{Channel: toChannel(ch), Command: toStreamCommand(cmd)}, nil
}

func (e *channelEndpoints) PauseChannel(ctx context.Context, r contract.PauseChannelRequestObject) (contract.PauseChannelResponseObject, error) {
	ch, err := e.channels.Pause(requestContext(ctx), actor(ctx).Actor, channels.ChannelID(r.ChannelId))
	if err != nil {
		return nil, err
	}
	return contract.PauseChannel200JSONResponse(toChannel(ch)), nil
}

func (e *channelEndpoints) ActivateChannel(ctx context.Context, r contract.ActivateChannelRequestObject) (contract.ActivateChannelResponseObject, error) {
	ch, err := e.channels.Activate(requestContext(ctx), actor(ctx).Actor, channels.ChannelID(r.ChannelId))
	if err != nil {
		return nil, err
	}
	return contract.ActivateChannel200JSONResponse(toChannel(ch)), nil
}

func (e *channelEndpoints) ReturnChannelToPending(ctx context.Context, r contract.ReturnChannelToPendingRequestObject) (contract.ReturnChannelToPendingResponseObject, error) {
	ch, err := e.channels.ReturnToPending(requestContext(ctx), actor(ctx).Actor, channels.ChannelID(r.ChannelId))
	if err != nil {
		return nil, err
	}
	return contract.ReturnChannelToPending200JSONResponse(toChannel(ch)), nil
}

func (e *channelEndpoints) ListThirdPartyChannels(ctx context.Context, r contract.ListThirdPartyChannelsRequestObject) (contract.ListThirdPartyChannelsResponseObject, error) {
	out, err := e.list(ctx, contract.ListChannelsParams(r.Params))
	if err != nil {
		return nil, err
	}
	return contract.ListThirdPartyChannels200JSONResponse(out), nil
}

func (e *channelEndpoints) GetThirdPartyChannel(ctx context.Context, r contract.GetThirdPartyChannelRequestObject) (contract.GetThirdPartyChannelResponseObject, error) {
	ch, err := e.channels.Get(requestContext(ctx), channels.ChannelID(r.ChannelId))
	if err != nil {
		return nil, err
	}
	return contract.GetThirdPartyChannel200JSONResponse(toChannel(ch)), nil
}

func (e *channelEndpoints) StartThirdPartyChannel(ctx context.Context, r contract.StartThirdPartyChannelRequestObject) (contract.StartThirdPartyChannelResponseObject, error) {
	out, err := e.start(ctx, r.ChannelId)
	if err != nil {
		return nil, err
	}
	return contract.StartThirdPartyChannel200JSONResponse(out), nil
}

func (e *channelEndpoints) StopThirdPartyChannel(ctx context.Context, r contract.StopThirdPartyChannelRequestObject) (contract.StopThirdPartyChannelResponseObject, error) {
	out, err := e.stop(ctx, r.ChannelId)
	if err != nil {
		return nil, err
	}
	return contract.StopThirdPartyChannel200JSONResponse(out), nil
}
