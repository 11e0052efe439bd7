package gb28181

import (
	"context"
	"errors"
	"time"
)

// Relay passes commands to holder, the control node that holds the
// device's SIP transport, and returns what that node answered. The holder
// runs them through its own transport only (the Local* methods), so a
// command is never passed on twice.
type Relay interface {
	DeviceControl(ctx context.Context, holder string, id DeviceID, channelID, ptzCmd string) error
	QueryPresets(ctx context.Context, holder string, id DeviceID, channelID string) ([]Preset, error)
	StartRecordQuery(ctx context.Context, holder string, q RecordQueryRequest) (*RecordQuery, error)
	// Invite answers the holder's session; its NodeID names the holder.
	Invite(ctx context.Context, holder string, r InviteRequest) (*MediaSession, error)
	Bye(ctx context.Context, holder, callID string) error
	// MediaEnded tells origin, the node that relayed an INVITE, that the
	// device ended the session.
	MediaEnded(ctx context.Context, origin, callID, why string) error
}

// RecordQueryRequest is what StartRecordQuery asks, as a relay carries it.
type RecordQueryRequest struct {
	DeviceID  DeviceID      `json:"deviceId"`
	ChannelID string        `json:"channelId"`
	Start     time.Time     `json:"startTime"`
	End       time.Time     `json:"endTime"`
	Idle      time.Duration `json:"idle"`
}

// SetRelay installs how commands reach devices held by other control
// nodes. Call it before the API serves.
func (s *Service) SetRelay(r Relay) { s.relay = r }

// NodeID is the control node this service runs on.
func (s *Service) NodeID() string { return s.nodeID }

// Holder is the other control node a command for id must go through, ""
// when this node may send it itself (see holder).
func (s *Service) Holder(ctx context.Context, id DeviceID) (string, error) { return s.holder(ctx, id) }

// holder is the other control node a command for id must go through: ""
// when this node holds the device's transport, when no relay is set, or
// when the record names no other node holding it online (the local
// attempt then answers device offline).
func (s *Service) holder(ctx context.Context, id DeviceID) (string, error) {
	s.mu.Lock()
	local := s.live[id] != nil && s.live[id].addr != "" && s.live[id].status == StatusOnline
	s.mu.Unlock()
	if local || s.relay == nil {
		return "", nil
	}
	d, err := GetDevice(ctx, s.store, id)
	if errors.Is(err, ErrDeviceNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if d.Status == StatusOnline && d.NodeID != "" && d.NodeID != s.nodeID {
		return d.NodeID, nil
	}
	return "", nil
}
