package gb28181

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/store"
)

// writeTimeout bounds one transition's Txn.
const writeTimeout = 10 * time.Second

// errUnchanged ends an Update that has nothing to write.
var errUnchanged = errors.New("unchanged")

// register records a successful REGISTER: a new device is created
// (registered), an offline one comes back (recovered), a device whose
// transport moved to this node or another address is updated silently,
// and a refresh that changes nothing writes nothing.
//
// It reports whether the device came online (registered or recovered),
// when the platform asks for its catalog.
func (s *Service) register(id DeviceID, transport, addr string, expires int, now time.Time) (bool, error) {
	s.mu.Lock()
	p := s.live[id]
	if p == nil {
		p = &presence{}
		s.live[id] = p
	}
	known := p.status == StatusOnline && p.transport == transport && p.addr == addr
	p.lastSeen, p.expiresAt = now, now.Add(time.Duration(expires)*time.Second)
	_, recorded := s.recorded[id]
	s.mu.Unlock()
	if known {
		return false, nil // a refresh: rule 7, nothing to write or emit
	}
	ctx, cancel := context.WithTimeout(s.ctx, writeTimeout)
	defer cancel()
	var status Status
	var window time.Duration
	cameOnline := false
	// A device without a record here is most likely new: its first
	// registration does not read the record it believes absent.
	update := store.Update
	if !recorded {
		update = store.UpdateAbsent
	}
	_, err := update(ctx, s.store, deviceKey(id), func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
		var d Device
		var evName, reason string
		var previous *Status
		if kv == nil {
			d = Device{DeviceID: id, Direction: DirectionInbound, Status: StatusOnline, RegisteredAt: now.UTC(), StatusChangedAt: now.UTC()}
			evName, reason = events.DeviceGB28181Registered, "first successful REGISTER"
		} else {
			cur, err := store.Decode[Device](kv)
			if err != nil {
				return nil, nil, nil, err
			}
			d = cur
			if d.Status != StatusOnline {
				prev := d.Status
				previous = &prev
				d.Status, d.StatusChangedAt = StatusOnline, now.UTC()
				evName, reason = events.DeviceGB28181Recovered, "REGISTER from an offline device"
			} else if d.NodeID == s.nodeID && d.Transport == transport && d.RemoteAddr == addr && d.Expires == expires {
				status, window = d.Status, s.cfg.window(time.Duration(d.KeepaliveIntervalSec)*time.Second, d.KeepaliveCount)
				return nil, nil, nil, errUnchanged
			}
		}
		d.Transport, d.RemoteAddr, d.NodeID, d.Expires = transport, addr, s.nodeID, expires
		status, window = d.Status, s.cfg.window(time.Duration(d.KeepaliveIntervalSec)*time.Second, d.KeepaliveCount)
		val, err := json.Marshal(d)
		if err != nil {
			return nil, nil, nil, err
		}
		var ops []store.Op
		cameOnline = evName != ""
		if evName != "" {
			op, err := s.eventOp(evName, id, d.Name, StatusOnline, previous, reason, now)
			if err != nil {
				return nil, nil, nil, err
			}
			ops = append(ops, op)
		}
		return val, ops, nil, nil
	})
	if err != nil && !errors.Is(err, errUnchanged) {
		return false, err
	}
	s.mu.Lock()
	p.status, p.window, p.transport, p.addr = status, window, transport, addr
	s.recorded[id] = struct{}{}
	s.mu.Unlock()
	return cameOnline && err == nil, nil
}

// keepalive records a keep-alive from a registered device. It writes only
// when the device was offline (recovered) or its transport moved here.
func (s *Service) keepalive(id DeviceID, transport, addr string, now time.Time) error {
	s.mu.Lock()
	p := s.live[id]
	if p != nil && p.status == StatusOnline {
		p.lastSeen = now
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	d, err := GetDevice(s.ctx, s.store, id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.recorded[id] = struct{}{} // just read: register need not guess
	s.mu.Unlock()
	// A keep-alive keeps the registration the device made; it does not
	// extend it.
	_, err = s.register(id, transport, addr, d.Expires, now)
	return err
}

// markOffline turns a silent device offline.
func (s *Service) markOffline(id DeviceID, now time.Time) error {
	ctx, cancel := context.WithTimeout(s.ctx, writeTimeout)
	defer cancel()
	_, err := store.Update(ctx, s.store, deviceKey(id), func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
		if kv == nil {
			return nil, nil, nil, errUnchanged
		}
		d, err := store.Decode[Device](kv)
		if err != nil {
			return nil, nil, nil, err
		}
		if d.Status != StatusOnline || d.NodeID != s.nodeID {
			return nil, nil, nil, errUnchanged // another node holds it now
		}
		prev := d.Status
		d.Status, d.StatusChangedAt = StatusOffline, now.UTC()
		val, err := json.Marshal(d)
		if err != nil {
			return nil, nil, nil, err
		}
		op, err := s.eventOp(events.DeviceGB28181Offline, id, d.Name, StatusOffline, &prev, "no keep-alive or REGISTER within the heartbeat window", now)
		if err != nil {
			return nil, nil, nil, err
		}
		return val, []store.Op{op}, nil, nil
	})
	s.mu.Lock()
	if p := s.live[id]; p != nil && (err == nil || errors.Is(err, errUnchanged)) {
		if err == nil {
			p.status = StatusOffline
		} else {
			delete(s.live, id) // not ours (any more)
		}
	}
	s.mu.Unlock()
	if errors.Is(err, errUnchanged) {
		return nil
	}
	if err == nil {
		s.deviceOffline(id, "GB28181 device "+string(id)+" went offline (no keep-alive or REGISTER within the heartbeat window)")
	}
	return err
}

// unregister removes a device that sent Expires: 0.
func (s *Service) unregister(id DeviceID, now time.Time) error {
	ctx, cancel := context.WithTimeout(s.ctx, writeTimeout)
	defer cancel()
	for attempt := 0; attempt < 5; attempt++ {
		kv, _, err := store.Get(ctx, s.store, deviceKey(id), store.Local)
		if err != nil {
			return err
		}
		if kv == nil {
			break // never registered, or already gone: nothing to emit
		}
		d, err := store.Decode[Device](kv)
		if err != nil {
			return err
		}
		prev := d.Status
		op, err := s.eventOp(events.DeviceGB28181Unregistered, id, d.Name, StatusUnregistered, &prev, "REGISTER with Expires: 0", now)
		if err != nil {
			return err
		}
		resp, err := s.store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(kv.Key, kv.ModRevision)},
			Then: []store.Op{store.Delete(kv.Key), op}})
		if err != nil {
			return err
		}
		if resp.Succeeded {
			break
		}
		if err := s.store.WaitForRevision(ctx, resp.Header.Revision); err != nil {
			return err
		}
	}
	s.mu.Lock()
	if p := s.live[id]; p != nil {
		p.status = StatusUnregistered
	}
	delete(s.recorded, id)
	s.mu.Unlock()
	return nil
}

// recordAuthFailed writes an auth_failed event (no state changes).
func (s *Service) recordAuthFailed(id DeviceID, reason string, now time.Time) error {
	ctx, cancel := context.WithTimeout(s.ctx, writeTimeout)
	defer cancel()
	status := StatusUnregistered
	var name *string
	if d, err := GetDevice(ctx, s.store, id); err == nil {
		status, name = d.Status, d.Name
	}
	op, err := s.eventOp(events.DeviceGB28181AuthFailed, id, name, status, &status, reason, now)
	if err != nil {
		return err
	}
	_, err = s.store.Txn(ctx, store.TxnRequest{Then: []store.Op{op}})
	return err
}
