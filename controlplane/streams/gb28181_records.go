package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/gb28181"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/controlplane/parallel"
	"github.com/svcplatform/svc/controlplane/store"
)

// GBLivePrefix holds one record per running GB28181 live session, by
// channel: what its start set up (the port lease, the engine's RTP server,
// the SIP dialog and the node holding it). Whoever ends the session (a
// later leader, the node an engine's hook reaches, the leader sweeping a
// dead holder) undoes it from this record: the starting leader's memory
// may be gone.
const GBLivePrefix = "/gb28181/live-sessions/"

// gbLiveRecord is the replicated form of a gbLive.
type gbLiveRecord struct {
	ChannelID channels.ChannelID `json:"channelId"`
	// CommandID is the start command: undo steps run under its keys, so a
	// second undo of the same session repeats nothing.
	CommandID     channels.CommandID `json:"commandId"`
	MediaServerID string             `json:"mediaServerId"`
	EngineNodeID  string             `json:"engineNodeId"`
	LeaseID       string             `json:"leaseId"`
	Port          int                `json:"port"`
	ServerID      string             `json:"serverId"`
	DeviceID      string             `json:"deviceId"`
	DeviceChannel string             `json:"deviceChannelId"`
	CallID        string             `json:"callId"`
	// Holder is the control node holding the SIP dialog.
	Holder    string    `json:"holder"`
	CreatedAt time.Time `json:"createdAt"`
}

func gbLiveKey(id channels.ChannelID) string { return GBLivePrefix + string(id) }

func (l *gbLive) record() gbLiveRecord {
	r := gbLiveRecord{ChannelID: l.channel, CommandID: l.cmd.CommandID, LeaseID: l.lease.LeaseID, Port: l.lease.Port, ServerID: l.server.ID,
		CreatedAt: time.Now().UTC()}
	if l.rec != nil {
		r.MediaServerID, r.EngineNodeID = l.rec.MediaServerID, l.rec.NodeID
	}
	if m := l.session; m != nil {
		r.DeviceID, r.DeviceChannel, r.CallID, r.Holder = string(m.DeviceID), m.ChannelID, m.CallID, m.NodeID
	}
	return r
}

// live is what undoing the recorded session needs.
func (r gbLiveRecord) live() *gbLive {
	l := &gbLive{cmd: channels.StreamCommand{CommandID: r.CommandID, ChannelID: r.ChannelID}, channel: r.ChannelID,
		rec: &nodes.Record{NodeID: r.EngineNodeID, MediaServerID: r.MediaServerID}}
	l.lease.LeaseID, l.lease.Port, l.server.ID = r.LeaseID, r.Port, r.ServerID
	if r.CallID != "" {
		l.session = &gb28181.MediaSession{DeviceID: gb28181.DeviceID(r.DeviceID), ChannelID: r.DeviceChannel, CallID: r.CallID, NodeID: r.Holder}
	}
	return l
}

// putGBLive records a started session.
func (d *Dispatcher) putGBLive(ctx context.Context, l *gbLive) error {
	if d.Store == nil {
		return nil
	}
	op, err := store.PutRecord(gbLiveKey(l.channel), l.record())
	if err != nil {
		return err
	}
	_, err = d.Store.Txn(ctx, store.TxnRequest{Then: []store.Op{op}})
	return err
}

// takeGBLive removes and returns the channel's session: the dispatcher's
// own when it started it, else the recorded one (another leader started
// it); nil when there is none.
func (d *Dispatcher) takeGBLive(ctx context.Context, id channels.ChannelID) (*gbLive, error) {
	d.gb.mu.Lock()
	live := d.gb.m[id]
	delete(d.gb.m, id)
	d.gb.mu.Unlock()
	if live != nil || d.Store == nil {
		return live, nil
	}
	r, kv, err := store.GetRecord[gbLiveRecord](ctx, d.Store, gbLiveKey(id), store.Local)
	if err != nil || kv == nil {
		return nil, err
	}
	return r.live(), nil
}

// dropGBLive deletes the channel's record if it is still the one of the
// session started by cmd (a newer start keeps its own).
func (d *Dispatcher) dropGBLive(ctx context.Context, id channels.ChannelID, cmd channels.CommandID) {
	if d.Store == nil {
		return
	}
	r, kv, err := store.GetRecord[gbLiveRecord](ctx, d.Store, gbLiveKey(id), store.Local)
	if err == nil && kv != nil && r.CommandID == cmd {
		_, err = d.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(kv.Key, kv.ModRevision)},
			Then: []store.Op{store.Delete(kv.Key)}})
	}
	if err != nil {
		d.Log.Warn("removing a GB28181 live session record failed", zap.String("channel", string(id)), zap.Error(err))
	}
}

// gbLiveByServer removes and returns the session whose RTP server is
// serverID, from memory or else from the records.
func (d *Dispatcher) gbLiveByServer(ctx context.Context, serverID string) (*gbLive, error) {
	d.gb.mu.Lock()
	for id, l := range d.gb.m {
		if l.server.ID == serverID {
			delete(d.gb.m, id)
			d.gb.mu.Unlock()
			return l, nil
		}
	}
	d.gb.mu.Unlock()
	if d.Store == nil {
		return nil, nil
	}
	rs, err := store.Records[gbLiveRecord](ctx, d.Store, GBLivePrefix, store.Local)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		if r.ServerID == serverID {
			return r.live(), nil
		}
	}
	return nil, nil
}

// endGBAtOnce bounds the GB28181 sessions ended at once when what they
// depend on is gone. Each end may wait on its device's BYE (up to 10 s
// when the device went silent) and on two node commands: one after the
// other, a device with 16 live channels took minutes to release its
// ports; all at once, a node with thousands of devices would open as many
// transactions and commands together.
const endGBAtOnce = 16

// EndGB ends the live sessions that depend on what is gone: a control
// node (it held their SIP dialog) or a device that went offline. The BYE
// of a dead holder's dialog is not attempted (nobody can send it); the RTP
// server is closed and the port released, the record deleted, and the
// channel's start counts as a failed attempt with the reason, so the
// channel is Retrying, not Online or Starting for ever, and auto-recovery
// INVITEs again once the device is back.
func (d *Dispatcher) EndGB(ctx context.Context, gone gb28181.Gone) error {
	if d.Store == nil {
		return nil
	}
	rs, err := store.Records[gbLiveRecord](ctx, d.Store, GBLivePrefix, store.Local)
	if err != nil {
		return err
	}
	var ending []gbLiveRecord
	for _, r := range rs {
		if gone.Ends(r.Holder, "", gb28181.DeviceID(r.DeviceID)) {
			ending = append(ending, r)
		}
	}
	// Concurrently: a device gone silent answers none of its BYEs, and
	// each waits for its timeout.
	return parallel.Each(ending, endGBAtOnce, func(r gbLiveRecord) error {
		d.gb.mu.Lock()
		if l := d.gb.m[r.ChannelID]; l != nil && l.cmd.CommandID == r.CommandID {
			delete(d.gb.m, r.ChannelID)
		}
		d.gb.mu.Unlock()
		live := r.live()
		if gone.Node != "" {
			live.session = nil
		}
		d.Log.Info("ending a GB28181 live session", zap.String("channel", string(r.ChannelID)), zap.String("reason", gone.Reason))
		d.undoGB(ctx, live.cmd, live)
		// A stream that was Online is counted by its loss (the RTP server
		// closed); one still waiting for media is counted here.
		if _, err := d.Channels.RecordFailedStart(ctx, system, r.ChannelID, r.CommandID, "GB28181 session ended: "+gone.Reason); err != nil &&
			!errors.Is(err, channels.ErrNotFound) {
			return fmt.Errorf("channel %s: %w", r.ChannelID, err)
		}
		return nil
	})
}
