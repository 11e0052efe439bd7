package httpapi

import (
	"context"
	"fmt"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/channels"
)

// gbChannel finds the channel record of a device's channel.
func (e *gb28181Endpoints) gbChannel(ctx context.Context, deviceID, channelID string) (*channels.Channel, error) {
	rows, _, err := e.channels.List(ctx, channels.Filter{Protocol: channels.ProtocolGB28181, DeviceID: deviceID, DeviceChannelID: channelID, PageSize: 2})
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: no channel %s of GB28181 device %s (its catalog lists the device's channels)", channels.ErrNotFound, channelID, deviceID)
	}
	return &rows[0], nil
}

// InviteGb28181Live answers POST /api/v2/gb28181/live/invite: the
// channel's start, with how its device is INVITEd.
func (e *gb28181Endpoints) InviteGb28181Live(ctx context.Context, r contract.InviteGb28181LiveRequestObject) (contract.InviteGb28181LiveResponseObject, error) {
	rctx, b := requestContext(ctx), r.Body
	ch, err := e.gbChannel(rctx, b.DeviceId, b.ChannelId)
	if err != nil {
		return nil, err
	}
	if ms := deref(b.MediaServerId, ""); ms != "" && ms != ch.MediaServerID {
		if ch.DesiredState == channels.DesiredRunning {
			return nil, fmt.Errorf("%w: channel %s runs on media server %s; stop it first", channels.ErrRunning, ch.ChannelID, ch.MediaServerID)
		}
		rec, err := e.nodes.Resolve(rctx, "", ms)
		if err != nil {
			return nil, err
		}
		if _, err := e.channels.AssignMediaServer(rctx, actor(ctx).Actor, ch.ChannelID, rec.MediaServerID, rec.NodeID); err != nil {
			return nil, err
		}
	}
	ch, cmd, err := e.channels.StartGB(rctx, actor(ctx).Actor, ch.ChannelID, &channels.GBStart{TCP: deref(b.RtpWithTcp, false), TimeoutSeconds: deref(b.TimeoutSeconds, 0)})
	if err != nil {
		return nil, err
	}
	return contract.InviteGb28181Live200JSONResponse{Channel: toChannel(ch), Command: toStreamCommand(cmd)}, nil
}

// StopGb28181Live answers POST /api/v2/gb28181/live/stop: auto-recovery
// paused, then the stop (contract B, third-party rule 5), so the BYE is
// not followed by a new INVITE.
func (e *gb28181Endpoints) StopGb28181Live(ctx context.Context, r contract.StopGb28181LiveRequestObject) (contract.StopGb28181LiveResponseObject, error) {
	rctx, b := requestContext(ctx), r.Body
	ch, err := e.gbChannel(rctx, b.DeviceId, b.ChannelId)
	if err != nil {
		return nil, err
	}
	if _, err := e.channels.Pause(rctx, actor(ctx).Actor, ch.ChannelID); err != nil {
		return nil, err
	}
	ch, cmd, err := e.channels.Stop(rctx, actor(ctx).Actor, ch.ChannelID)
	if err != nil {
		return nil, err
	}
	out := contract.StopGb28181Live200JSONResponse{StreamCommandId: string(cmd.CommandID), State: contract.StreamCommandState(cmd.State), Channel: toChannel(ch)}
	if cmd.NodeCommandID != "" {
		out.NodeCommandId = &cmd.NodeCommandID
	}
	return out, nil
}
