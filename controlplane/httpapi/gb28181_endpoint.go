package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/gb28181"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/controlplane/playback"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
	"github.com/svcplatform/svc/controlplane/streams"
)

// gb28181Endpoints serves the GB28181 device registry.
type gb28181Endpoints struct {
	store store.Store
	// reader answers the device list from the status index.
	reader query.Reader
	// gb is the node's SIP server and playback its history playback
	// sessions, nil when it runs none.
	gb       *gb28181.Service
	playback *streams.GBPlayback
	leases   *playback.Service
	channels *channels.Service
	nodes    *nodes.Service
}

// ListGb28181Devices answers GET /api/v2/gb28181/devices.
func (e *gb28181Endpoints) ListGb28181Devices(ctx context.Context, r contract.ListGb28181DevicesRequestObject) (contract.ListGb28181DevicesResponseObject, error) {
	page, size := int(deref(r.Params.Page, 1)), int(deref(r.Params.PageSize, 50))
	var status gb28181.Status
	if r.Params.Status != nil {
		status = gb28181.Status(*r.Params.Status)
	}
	rows, total, err := gb28181.DevicePage(requestContext(ctx), e.reader, status, page, size)
	if err != nil {
		return nil, err
	}
	out := contract.ListGb28181Devices200JSONResponse{Page: int32(page), PageSize: int32(size), Total: total, Rows: []contract.Gb28181Device{}}
	for _, d := range rows {
		out.Rows = append(out.Rows, deviceOut(d))
	}
	return out, nil
}

// GetGb28181Device answers GET /api/v2/gb28181/devices/{deviceId}.
func (e *gb28181Endpoints) GetGb28181Device(ctx context.Context, r contract.GetGb28181DeviceRequestObject) (contract.GetGb28181DeviceResponseObject, error) {
	if !gb28181.ValidCode(r.DeviceId) {
		return nil, &Error{Status: http.StatusBadRequest, Code: "invalid_body", Message: "deviceId must be a 20-digit GB28181 code", Retryable: retryable(false)}
	}
	d, err := gb28181.GetDevice(requestContext(ctx), e.store, gb28181.DeviceID(r.DeviceId))
	if errors.Is(err, gb28181.ErrDeviceNotFound) {
		return nil, &Error{Status: http.StatusNotFound, Code: "gb28181_device_not_found", Message: "no GB28181 device " + r.DeviceId + " is registered",
			Retryable: retryable(false), Err: err}
	}
	if err != nil {
		return nil, err
	}
	return contract.GetGb28181Device200JSONResponse(deviceOut(*d)), nil
}

func deviceOut(d gb28181.Device) contract.Gb28181Device {
	out := contract.Gb28181Device{DeviceId: string(d.DeviceID), Name: d.Name, Direction: d.Direction, Status: contract.Gb28181DeviceStatus(d.Status),
		Transport: contract.Gb28181DeviceTransport(d.Transport), RemoteAddr: d.RemoteAddr, NodeId: d.NodeID, Expires: int32(d.Expires),
		Channels: int32(d.Channels), RegisteredAt: d.RegisteredAt, StatusChangedAt: d.StatusChangedAt}
	if d.Manufacturer != "" {
		out.Manufacturer = &d.Manufacturer
	}
	if d.Model != "" {
		out.Model = &d.Model
	}
	return out
}
