package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/gb28181"
)

// ControlChannelPtz sends a PTZ command to a GB28181 channel's device (a
// DeviceControl PTZCmd through the node holding its SIP transport); other
// protocols answer as channels.PTZ says.
func (e *channelEndpoints) ControlChannelPtz(ctx context.Context, r contract.ControlChannelPtzRequestObject) (contract.ControlChannelPtzResponseObject, error) {
	ch, err := e.channels.Get(requestContext(ctx), channels.ChannelID(r.ChannelId))
	if err != nil {
		return nil, err
	}
	if ch.Protocol != channels.ProtocolGB28181 || e.gbPTZ == nil || r.Body == nil {
		return nil, e.ptz(ctx, r.ChannelId)
	}
	err = e.gbPTZ(requestContext(ctx), ch.DeviceID, ch.DeviceChannelID, string(r.Body.Command), int(deref(r.Body.Speed, 50)))
	switch {
	case errors.Is(err, gb28181.ErrInvalid):
		return nil, &Error{Status: http.StatusBadRequest, Code: "invalid_body", Message: err.Error(), Retryable: retryable(false), Err: err}
	case errors.Is(err, gb28181.ErrDeviceOffline):
		return nil, &Error{Status: http.StatusConflict, Code: "gb28181_device_offline", Message: err.Error(), Retryable: retryable(true), Err: err}
	case err != nil:
		return nil, &Error{Status: http.StatusBadGateway, Code: "gb28181_device_unreachable", Message: err.Error(), Retryable: retryable(true), Err: err}
	}
	return contract.ControlChannelPtz200JSONResponse{ChannelId: r.ChannelId, Command: string(r.Body.Command), AcceptedAt: time.Now().UTC()}, nil
}
