package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/gb28181"
)

// PTZ of channels. GB28181 channels are served here: commands go to the
// device as MANSCDP through the node holding its SIP transport, settings
// and the presets last listed are a replicated record per channel. Other
// protocols answer as channels.PTZ says (RTSP has no PTZ, ONVIF is not
// installed yet).

// gbPTZChannel is the channel when it is a GB28181 one, or the error every
// PTZ operation of it answers.
func (e *channelEndpoints) gbPTZChannel(ctx context.Context, id string) (*channels.Channel, error) {
	ch, err := e.channels.Get(requestContext(ctx), channels.ChannelID(id))
	if err != nil {
		return nil, err
	}
	if ch.Protocol != channels.ProtocolGB28181 {
		return nil, channels.PTZ(ch)
	}
	return ch, nil
}

// gbPTZState is a GB28181 channel with its PTZ settings.
func (e *channelEndpoints) gbPTZState(ctx context.Context, id string) (*channels.Channel, *gb28181.PTZSettings, error) {
	ch, err := e.gbPTZChannel(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	set, err := gb28181.GetPTZSettings(requestContext(ctx), e.store, string(ch.ChannelID))
	if err != nil {
		return nil, nil, err
	}
	return ch, set, nil
}

// gbCommandChannel is gbPTZChannel for a command: the node must run a SIP
// server and the channel's PTZ settings must allow it.
func (e *channelEndpoints) gbCommandChannel(ctx context.Context, id string) (*channels.Channel, error) {
	if e.gb == nil {
		if _, err := e.gbPTZChannel(ctx, id); err != nil {
			return nil, err
		}
		return nil, noSIP()
	}
	ch, set, err := e.gbPTZState(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := set.PTZAllowed(ch.HasPTZ); err != nil {
		return nil, err
	}
	return ch, nil
}

// gbDeviceError maps what a device command failed with: the domain's own
// faults keep their status, a MESSAGE the device did not accept is 502.
func gbDeviceError(err error) error {
	if _, ok := fault.Of(err); ok || err == nil {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return &Error{Status: http.StatusBadGateway, Code: "gb28181_device_unreachable", Message: err.Error(), Retryable: retryable(true), Err: err}
}

// ControlChannelPtz sends a PTZ command to a GB28181 channel's device (a
// DeviceControl PTZCmd); other protocols answer as channels.PTZ says.
func (e *channelEndpoints) ControlChannelPtz(ctx context.Context, r contract.ControlChannelPtzRequestObject) (contract.ControlChannelPtzResponseObject, error) {
	ch, err := e.gbCommandChannel(ctx, r.ChannelId)
	if err != nil {
		return nil, err
	}
	if r.Body == nil {
		return nil, &Error{Status: http.StatusBadRequest, Code: "invalid_body", Message: "a PTZ command body is required", Retryable: retryable(false)}
	}
	err = e.gb.ChannelPTZ(requestContext(ctx), gb28181.DeviceID(ch.DeviceID), ch.DeviceChannelID, string(r.Body.Command), int(deref(r.Body.Speed, 50)))
	if err != nil {
		return nil, gbDeviceError(err)
	}
	return contract.ControlChannelPtz200JSONResponse{ChannelId: r.ChannelId, Command: string(r.Body.Command), AcceptedAt: time.Now().UTC()}, nil
}

// ptzCapabilities are a GB28181 channel's capabilities: the movements
// follow what the catalog reported (or the administrator confirmed); the
// presets are those the device last listed.
func ptzCapabilities(ch *channels.Channel, set *gb28181.PTZSettings) contract.ChannelPtzCapabilities {
	can := ch.HasPTZ || set.ConfirmedByAdministrator
	at := ch.CreatedAt.UTC()
	if set.PresetsAt != nil {
		at = set.PresetsAt.UTC()
	}
	return contract.ChannelPtzCapabilities{ChannelId: string(ch.ChannelID), Pan: can, Tilt: can, Zoom: can, Focus: can, Iris: can,
		Presets: int32(len(set.Presets)), RefreshedAt: at}
}

func (e *channelEndpoints) GetChannelPtzCapabilities(
	ctx context.Context,
	r contract.GetChannelPtzCapabilitiesRequestObject,
) (contract.GetChannelPtzCapabilitiesResponseObject, error) {
	ch, set, err := e.gbPTZState(ctx, r.ChannelId)
	if err != nil {
		return nil, err
	}
	return contract.GetChannelPtzCapabilities200JSONResponse(ptzCapabilities(ch, set)), nil
}

// refreshPresets asks the device for the channel's presets and keeps them.
func (e *channelEndpoints) refreshPresets(ctx context.Context, ch *channels.Channel) (*gb28181.PTZSettings, error) {
	if e.gb == nil {
		return nil, noSIP()
	}
	ps, err := e.gb.QueryPresets(requestContext(ctx), gb28181.DeviceID(ch.DeviceID), ch.DeviceChannelID)
	if err != nil {
		return nil, gbDeviceError(err)
	}
	now := time.Now()
	return gb28181.UpdatePTZSettings(requestContext(ctx), e.store, string(ch.ChannelID), now, func(p *gb28181.PTZSettings) {
		p.Presets, p.PresetsAt = ps, &now
	})
}

func (e *channelEndpoints) RefreshChannelPtzCapabilities(
	ctx context.Context,
	r contract.RefreshChannelPtzCapabilitiesRequestObject,
) (contract.RefreshChannelPtzCapabilitiesResponseObject, error) {
	ch, err := e.gbPTZChannel(ctx, r.ChannelId)
	if err != nil {
		return nil, err
	}
	set, err := e.refreshPresets(ctx, ch)
	if err != nil {
		return nil, err
	}
	return contract.RefreshChannelPtzCapabilities200JSONResponse(ptzCapabilities(ch, set)), nil
}

func ptzSettings(ch *channels.Channel, set *gb28181.PTZSettings) contract.ChannelPtzSettings {
	return contract.ChannelPtzSettings{ChannelId: string(ch.ChannelID), DeviceReportsPtz: ch.HasPTZ, Enabled: !set.Disabled,
		ConfirmedByAdministrator: set.ConfirmedByAdministrator}
}

func (e *channelEndpoints) GetChannelPtzSettings(ctx context.Context, r contract.GetChannelPtzSettingsRequestObject) (contract.GetChannelPtzSettingsResponseObject, error) {
	ch, set, err := e.gbPTZState(ctx, r.ChannelId)
	if err != nil {
		return nil, err
	}
	return contract.GetChannelPtzSettings200JSONResponse(ptzSettings(ch, set)), nil
}

func (e *channelEndpoints) UpdateChannelPtzSettings(
	ctx context.Context,
	r contract.UpdateChannelPtzSettingsRequestObject,
) (contract.UpdateChannelPtzSettingsResponseObject, error) {
	ch, err := e.gbPTZChannel(ctx, r.ChannelId)
	if err != nil {
		return nil, err
	}
	if r.Body == nil {
		return nil, &Error{Status: http.StatusBadRequest, Code: "invalid_body", Message: "a PTZ settings body is required", Retryable: retryable(false)}
	}
	set, err := gb28181.UpdatePTZSettings(requestContext(ctx), e.store, string(ch.ChannelID), time.Now(), func(p *gb28181.PTZSettings) {
		p.Disabled = !r.Body.Enabled
		if r.Body.ConfirmedByAdministrator != nil {
			p.ConfirmedByAdministrator = *r.Body.ConfirmedByAdministrator
		}
	})
	if err != nil {
		return nil, err
	}
	return contract.UpdateChannelPtzSettings200JSONResponse(ptzSettings(ch, set)), nil
}

func (e *channelEndpoints) ListChannelPtzPresets(ctx context.Context, r contract.ListChannelPtzPresetsRequestObject) (contract.ListChannelPtzPresetsResponseObject, error) {
	ch, err := e.gbPTZChannel(ctx, r.ChannelId)
	if err != nil {
		return nil, err
	}
	set, err := e.refreshPresets(ctx, ch)
	if err != nil {
		return nil, err
	}
	out := contract.ListChannelPtzPresets200JSONResponse{ChannelId: r.ChannelId, Presets: []contract.ChannelPtzPreset{}, RefreshedAt: set.PresetsAt.UTC()}
	for _, p := range set.Presets {
		out.Presets = append(out.Presets, contract.ChannelPtzPreset{PresetId: int32(p.PresetID), Name: p.Name})
	}
	return out, nil
}

// preset sends one preset command and says what was accepted.
func (e *channelEndpoints) preset(ctx context.Context, id string, n int32, op byte, action contract.ChannelPtzPresetAcceptedAction) (contract.ChannelPtzPresetAccepted, error) {
	ch, err := e.gbCommandChannel(ctx, id)
	if err != nil {
		return contract.ChannelPtzPresetAccepted{}, err
	}
	if err := e.gb.ChannelPreset(requestContext(ctx), gb28181.DeviceID(ch.DeviceID), ch.DeviceChannelID, op, int(n)); err != nil {
		return contract.ChannelPtzPresetAccepted{}, gbDeviceError(err)
	}
	return contract.ChannelPtzPresetAccepted{ChannelId: id, PresetId: n, Action: action, AcceptedAt: time.Now().UTC()}, nil
}

func (e *channelEndpoints) SetChannelPtzPreset(ctx context.Context, r contract.SetChannelPtzPresetRequestObject) (contract.SetChannelPtzPresetResponseObject, error) {
	out, err := e.preset(ctx, r.ChannelId, r.PresetId, gb28181.PresetSet, contract.ChannelPtzPresetAcceptedActionSet)
	if err != nil {
		return nil, err
	}
	return contract.SetChannelPtzPreset200JSONResponse(out), nil
}

func (e *channelEndpoints) GotoChannelPtzPreset(ctx context.Context, r contract.GotoChannelPtzPresetRequestObject) (contract.GotoChannelPtzPresetResponseObject, error) {
	out, err := e.preset(ctx, r.ChannelId, r.PresetId, gb28181.PresetGoto, contract.ChannelPtzPresetAcceptedActionGoto)
	if err != nil {
		return nil, err
	}
	return contract.GotoChannelPtzPreset200JSONResponse(out), nil
}

func (e *channelEndpoints) DeleteChannelPtzPreset(ctx context.Context, r contract.DeleteChannelPtzPresetRequestObject) (contract.DeleteChannelPtzPresetResponseObject, error) {
	out, err := e.preset(ctx, r.ChannelId, r.PresetId, gb28181.PresetDelete, contract.ChannelPtzPresetAcceptedActionDelete)
	if err != nil {
		return nil, err
	}
	return contract.DeleteChannelPtzPreset200JSONResponse(out), nil
}
