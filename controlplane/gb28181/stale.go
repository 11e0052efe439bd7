package gb28181

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// StaleHolders is the leader's watch over the control nodes holding
// devices' SIP transports. A device's presence is tracked by its holder
// alone, so a holder that dies would leave its devices online for ever:
// a holder that has left the membership, or has not answered probes for
// Timeout, has its online devices marked offline (one
// device.gb28181.offline each, with the reason). A device that registers
// with another node then comes back there (recovered).
type StaleHolders struct {
	Store store.Store
	// Reader finds the online devices other nodes hold (DeviceIndex).
	Reader query.Reader
	// NodeID is the leader's own id: it is alive, and it writes the events.
	NodeID string
	// Probe answers whether the control node is still a member and, if
	// it is, nil when it answers; a node that left the cluster makes its
	// devices stale at once.
	Probe   func(ctx context.Context, nodeID string) (member bool, err error)
	Timeout time.Duration
	Log     *zap.Logger
	// End ends the sessions that depend on what is gone (a stale control
	// node, a device gone offline): live and playback sessions, talk. Each
	// is told in turn; the dialog records go once all succeeded, so a
	// failure is tried again at the next sweep.
	End []func(ctx context.Context, gone Gone) error

	// failing is when each holder's probes started failing.
	failing map[string]time.Time
}

// Run sweeps every interval until ctx ends.
func (h *StaleHolders) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := h.Sweep(ctx, time.Now()); err != nil && ctx.Err() == nil {
			h.Log.Warn("GB28181 stale holder sweep failed", zap.Error(err))
		} else if n > 0 {
			h.Log.Info("GB28181 devices of gone control nodes marked offline", zap.Int("devices", n))
		}
	}
}

// Sweep probes the holders of online devices once and marks the devices of
// stale holders offline; it reports how many it marked.
func (h *StaleHolders) Sweep(ctx context.Context, now time.Time) (int, error) {
	if h.failing == nil {
		h.failing = map[string]time.Time{}
	}
	// Only devices online on another node can be stale: the leader's own
	// are alive. Reading just those keeps a sweep of a single node with
	// 2,000 devices from decoding 2,000 records every few seconds (a
	// sixth of the node's CPU at steady keep-alive state).
	devs, err := query.All(ctx, h.Reader, query.Query{Index: DeviceIndex.Name,
		Where: []query.Cond{query.Eq("status", string(StatusOnline)), query.Ne("node_id", h.NodeID)}}, query.JSON[Device])
	if err != nil {
		return 0, err
	}
	dialogs, err := store.Records[Dialog](ctx, h.Store, DialogPrefix, store.Local)
	if err != nil {
		return 0, err
	}
	// The devices of dialogs that are offline now: their dialogs end
	// below. Dialogs are few (running sessions), so each device is read
	// on its own.
	offline := map[DeviceID]bool{}
	for _, d := range dialogs {
		if _, seen := offline[d.DeviceID]; seen {
			continue
		}
		dev, err := GetDevice(ctx, h.Store, d.DeviceID)
		if err != nil && !errors.Is(err, ErrDeviceNotFound) {
			return 0, err
		}
		offline[d.DeviceID] = err == nil && dev.Status != StatusOnline
	}
	holders := map[string]bool{}
	for _, d := range devs { // online on other nodes, as read
		if d.NodeID != "" {
			holders[d.NodeID] = true
		}
	}
	// A node holding dialogs, or running the session a dialog serves, is
	// probed too: its devices may be offline already while its sessions
	// still hold ports and RTP servers.
	for _, d := range dialogs {
		for _, n := range []string{d.NodeID, d.Origin} {
			if n != "" && n != h.NodeID {
				holders[n] = true
			}
		}
	}
	for n := range h.failing {
		if !holders[n] {
			delete(h.failing, n)
		}
	}
	why := map[string]string{} // the cause, by stale node
	for n := range holders {
		pctx, cancel := context.WithTimeout(ctx, min(h.Timeout, 2*time.Second))
		member, err := h.Probe(pctx, n)
		cancel()
		switch {
		case !member:
			why[n] = "left the cluster"
		case err == nil:
			delete(h.failing, n)
		default:
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			first, seen := h.failing[n]
			if !seen {
				h.failing[n] = now
			} else if now.Sub(first) >= h.Timeout {
				why[n] = "has not answered for " + now.Sub(first).Round(time.Second).String()
			}
		}
	}
	marked := 0
	for _, d := range devs {
		cause, stale := why[d.NodeID]
		if !stale {
			continue
		}
		reason := fmt.Sprintf("control node %s, which held its SIP transport, %s", d.NodeID, cause)
		ok, err := h.markStale(ctx, d.DeviceID, d.NodeID, reason, now)
		if err != nil {
			return marked, err
		}
		if ok {
			marked++
		}
	}
	var errs []error
	for n, cause := range why {
		errs = append(errs, h.end(ctx, Gone{Node: n, Reason: fmt.Sprintf("control node %s %s", n, cause)}, dialogs))
	}
	// The dialogs of a device that went offline (its holder is alive)
	// end too: the device no longer answers, and its sessions would
	// otherwise wait for their RTP servers to time out, or for ever.
	ended := map[DeviceID]bool{}
	for _, d := range dialogs {
		if offline[d.DeviceID] && !ended[d.DeviceID] && why[d.NodeID] == "" {
			ended[d.DeviceID] = true
			errs = append(errs, h.end(ctx, Gone{Device: d.DeviceID, Reason: "GB28181 device " + string(d.DeviceID) + " went offline"}, dialogs))
		}
	}
	return marked, errors.Join(errs...)
}

// Gone is what sessions may depend on and is gone: a control node (Node:
// it held their SIP dialog, or ran them) or a device that went offline
// (Device). Reason says which, for the sessions' end.
type Gone struct {
	Node   string
	Device DeviceID
	Reason string
}

// Ends reports whether a session whose dialog holder holds, run by runner
// ("" when not known), with device, depends on what is gone.
func (g Gone) Ends(holder, runner string, device DeviceID) bool {
	if g.Node != "" {
		return holder == g.Node || runner == g.Node
	}
	return g.Device != "" && device == g.Device
}

// end tells every session owner what is gone, then deletes the dialog
// records it ended (each only if unchanged since the sweep read it).
func (h *StaleHolders) end(ctx context.Context, gone Gone, dialogs []Dialog) error {
	for _, fn := range h.End {
		if err := fn(ctx, gone); err != nil {
			return fmt.Errorf("ending the sessions of %s: %w", gone.Reason, err)
		}
	}
	var ops []store.Op
	for _, d := range dialogs {
		if gone.Node != "" && d.NodeID == gone.Node || gone.Device != "" && d.DeviceID == gone.Device {
			ops = append(ops, store.Delete(dialogKey(d.DeviceID, d.ChannelID, d.CallID)))
		}
	}
	if len(ops) == 0 {
		return nil
	}
	if _, err := h.Store.Txn(ctx, store.TxnRequest{Then: ops}); err != nil {
		return err
	}
	h.Log.Info("GB28181 dialogs ended", zap.Int("dialogs", len(ops)), zap.String("reason", gone.Reason))
	return nil
}

// markStale turns a device offline if it is still online on holder.
func (h *StaleHolders) markStale(ctx context.Context, id DeviceID, holder, reason string, now time.Time) (bool, error) {
	_, err := store.Update(ctx, h.Store, deviceKey(id), func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
		if kv == nil {
			return nil, nil, nil, errUnchanged
		}
		d, err := store.Decode[Device](kv)
		if err != nil {
			return nil, nil, nil, err
		}
		if d.Status != StatusOnline || d.NodeID != holder {
			return nil, nil, nil, errUnchanged // it registered elsewhere meanwhile
		}
		prev := d.Status
		d.Status, d.StatusChangedAt = StatusOffline, now.UTC()
		val, err := json.Marshal(d)
		if err != nil {
			return nil, nil, nil, err
		}
		op, err := deviceEventOp(h.NodeID, events.DeviceGB28181Offline, id, d.Name, StatusOffline, &prev, reason, now)
		if err != nil {
			return nil, nil, nil, err
		}
		return val, []store.Op{op}, nil, nil
	})
	if errors.Is(err, errUnchanged) {
		return false, nil
	}
	return err == nil, err
}

// reconcile brings this node's presence in line with the device records
// of the devices it believes online: the leader may have marked one
// offline while this node could not answer it (a partition, a long
// pause), or the device may have registered elsewhere since. Without this
// a device whose keep-alives keep arriving here would stay offline in the
// record until its registration expired. A device marked offline here is
// written back online (recovered) by its next keep-alive or REGISTER; one
// held elsewhere is forgotten here.
func (s *Service) reconcile(ctx context.Context) error {
	s.mu.Lock()
	var ids []DeviceID
	for id, p := range s.live {
		if p.status == StatusOnline {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	for _, id := range ids {
		d, err := GetDevice(ctx, s.store, id)
		if errors.Is(err, ErrDeviceNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if d.Status == StatusOnline && d.NodeID == s.nodeID {
			continue
		}
		s.mu.Lock()
		if p := s.live[id]; p != nil && p.status == StatusOnline {
			if d.NodeID == s.nodeID {
				p.status = d.Status
			} else {
				delete(s.live, id)
			}
		}
		s.mu.Unlock()
		s.log.Info("GB28181 device record differs from this node's presence", zap.String("deviceId", string(id)),
			zap.String("status", string(d.Status)), zap.String("holder", d.NodeID))
		s.deviceOffline(id, fmt.Sprintf("GB28181 device %s is %s in the cluster's records (holder %q), not online here", id, d.Status, d.NodeID))
	}
	return nil
}
