package gb28181

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/store"
)

// DialogPrefix holds one record per INVITE dialog a control node holds,
// keyed by device, channel and Call-ID: whichever node stops a session
// finds there the node that must send its BYE, even when the node that
// started it is gone.
const DialogPrefix = "/gb28181/dialogs/"

// Dialog is the replicated record of an accepted INVITE.
type Dialog struct {
	CallID    string   `json:"callId"`
	DeviceID  DeviceID `json:"deviceId"`
	ChannelID string   `json:"channelId"`
	NodeID    string   `json:"nodeId"`
	Playback  bool     `json:"playback"`
	// Origin is the node that relayed the INVITE, told when the device
	// ends the session; "" when it is NodeID.
	Origin    string    `json:"origin,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

func dialogKey(id DeviceID, channelID, callID string) string {
	return DialogPrefix + string(id) + "/" + channelID + "/" + callID
}

// holdDialog keeps an accepted dialog in memory, by Call-ID, and records
// that this node holds it.
func (s *Service) holdDialog(ctx context.Context, m *MediaSession, playback bool, origin string) error {
	if origin == s.nodeID {
		origin = ""
	}
	op, err := store.PutRecord(dialogKey(m.DeviceID, m.ChannelID, m.CallID), Dialog{CallID: m.CallID, DeviceID: m.DeviceID, ChannelID: m.ChannelID,
		NodeID: s.nodeID, Playback: playback, Origin: origin, CreatedAt: s.now().UTC()})
	if err != nil {
		return err
	}
	if _, err := s.store.Txn(ctx, store.TxnRequest{Then: []store.Op{op}}); err != nil {
		return err
	}
	s.mu.Lock()
	s.sessions[m.CallID] = m
	if origin != "" {
		s.origins[m.CallID] = origin
	}
	s.mu.Unlock()
	return nil
}

// dropDialog forgets an ended dialog and its record.
func (s *Service) dropDialog(ctx context.Context, callID string) {
	s.mu.Lock()
	m := s.sessions[callID]
	delete(s.sessions, callID)
	delete(s.origins, callID)
	s.mu.Unlock()
	if m == nil {
		return
	}
	if _, err := s.store.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Delete(dialogKey(m.DeviceID, m.ChannelID, m.CallID))}}); err != nil {
		s.log.Warn("GB28181 dialog record not removed", zap.String("callId", callID), zap.Error(err))
	}
}

// ChannelDialogs lists the recorded dialogs of one device channel.
func ChannelDialogs(ctx context.Context, st store.Store, id DeviceID, channelID string) ([]Dialog, error) {
	return store.Records[Dialog](ctx, st, DialogPrefix+string(id)+"/"+channelID+"/", store.Local)
}

// ByeChannel ends every live (not playback) dialog recorded for a device
// channel, each through the node holding it: a stop whose starter's
// memory is gone (another leader) still reaches the device.
func (s *Service) ByeChannel(ctx context.Context, id DeviceID, channelID string) error {
	ds, err := ChannelDialogs(ctx, s.store, id, channelID)
	if err != nil {
		return err
	}
	for _, d := range ds {
		if d.Playback {
			continue
		}
		m := &MediaSession{DeviceID: d.DeviceID, ChannelID: d.ChannelID, CallID: d.CallID, NodeID: d.NodeID}
		// A holder that is gone took the dialog with it; the record goes.
		if err := s.Bye(ctx, m); err != nil && !errors.Is(err, ErrDeviceOffline) {
			return err
		}
		if _, err := s.store.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Delete(dialogKey(d.DeviceID, d.ChannelID, d.CallID))}}); err != nil {
			return err
		}
	}
	return nil
}
