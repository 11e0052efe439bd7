package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/shared/agentapi"
)

// What caused a media server transition, the events' hookName.
const (
	CauseManagedProcess   = "managed-process"
	CauseHeartbeat        = "agent-heartbeat"
	CauseHeartbeatTimeout = "agent-heartbeat-timeout"
	CauseRetired          = "media-server-retired"
)

// Reasons the contract fixes for crash and start-failure events.
const (
	ReasonCrashed     = "managed-process-exited-unexpectedly"
	ReasonStartFailed = "managed-start-failed"
)

// lifecycleData is the data of media.server.started, stopped and
// recovered, with the contract's exact capitalisation. EngineNodeId is the
// node id of the engine's host: each media host runs one engine.
type lifecycleData struct {
	NodeID         string    `json:"NodeId"`
	EngineNodeID   *string   `json:"EngineNodeId"`
	MediaServerID  string    `json:"mediaServerId"`
	PreviousStatus string    `json:"previousStatus"`
	Status         string    `json:"status"`
	HookName       string    `json:"hookName"`
	OccurredAtUTC  time.Time `json:"occurredAtUtc"`
}

type crashedData struct {
	NodeID        string    `json:"NodeId"`
	EngineNodeID  string    `json:"engineNodeId"`
	PreviousPID   int       `json:"previousPid"`
	LastAction    *string   `json:"LastAction"`
	Reason        string    `json:"reason"`
	OccurredAtUTC time.Time `json:"occurredAtUtc"`
}

type startFailedData struct {
	NodeID        string    `json:"NodeId"`
	EngineNodeID  string    `json:"engineNodeId"`
	LastAction    *string   `json:"LastAction"`
	Reason        string    `json:"reason"`
	OccurredAtUTC time.Time `json:"occurredAtUtc"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// transition collects the record change and the events it causes, so both
// land in one Txn.
type transition struct {
	s      *Service
	rec    *Record
	at     time.Time
	events []events.Envelope
	// ops are further operations of the same Txn (the audit record).
	ops []store.Op
	err error
}

func (t *transition) emit(name string, data any) {
	ev, err := events.New(name, events.SourceMedia, t.s.LocalNodeID, data)
	if err != nil {
		t.err = errors.Join(t.err, err)
		return
	}
	ev.OccurredAtUTC = t.at
	t.events = append(t.events, ev)
}

// mediaUp brings the media server online: recovered after an unexpected
// outage of a server that was online before, started otherwise.
func (t *transition) mediaUp(cause string) {
	e := &t.rec.Engine
	if e.Media == MediaOnline {
		return
	}
	name := events.MediaServerStarted
	if e.EverOnline && e.Unexpected {
		name = events.MediaServerRecovered
	}
	prev := e.Media
	if prev == "" {
		prev = MediaOffline
	}
	e.Media, e.EverOnline, e.Unexpected, e.ChangedAt = MediaOnline, true, false, t.at
	t.emit(name, lifecycleData{NodeID: t.rec.NodeID, EngineNodeID: nullable(t.rec.NodeID), MediaServerID: t.rec.MediaServerID,
		PreviousStatus: prev, Status: MediaOnline, HookName: cause, OccurredAtUTC: t.at})
}

// mediaDown takes the media server offline; stopped is emitted unless the
// caller emits a crash instead.
func (t *transition) mediaDown(cause string, unexpected, emitStopped bool) {
	e := &t.rec.Engine
	if e.Media != MediaOnline {
		e.Unexpected = e.Unexpected || unexpected
		return
	}
	e.Media, e.Unexpected, e.ChangedAt = MediaOffline, unexpected, t.at
	if emitStopped {
		t.emit(events.MediaServerStopped, lifecycleData{NodeID: t.rec.NodeID, EngineNodeID: nullable(t.rec.NodeID), MediaServerID: t.rec.MediaServerID,
			PreviousStatus: MediaOnline, Status: MediaOffline, HookName: cause, OccurredAtUTC: t.at})
	}
}

func (t *transition) agentOnline() {
	if t.rec.Status != StatusOnline {
		t.rec.Status, t.rec.StatusChangedAt = StatusOnline, t.at
	}
}

// errUnchanged ends an update that has nothing to write.
var errUnchanged = errors.New("unchanged")

// change runs fn on the node's record and writes the record with the
// events fn emitted in one Txn; nothing is written when fn reports
// errUnchanged.
func (s *Service) change(ctx context.Context, nodeID string, fn func(t *transition) error) (*Record, error) {
	var out *Record
	_, err := store.Update(ctx, s.Store, recordKey(nodeID), func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
		if kv == nil {
			return nil, nil, nil, fmt.Errorf("%w: %q", ErrNotFound, nodeID)
		}
		rec, err := decode(kv)
		if err != nil {
			return nil, nil, nil, err
		}
		t := &transition{s: s, rec: rec, at: s.now()}
		if err := fn(t); err != nil {
			return nil, nil, nil, err
		}
		if t.err != nil {
			return nil, nil, nil, t.err
		}
		ops := t.ops
		for _, ev := range t.events {
			op, err := events.Op(ev)
			if err != nil {
				return nil, nil, nil, err
			}
			ops = append(ops, op)
		}
		val, err := json.Marshal(rec)
		out = rec
		return val, ops, nil, err
	})
	if errors.Is(err, errUnchanged) {
		return out, nil
	}
	return out, err
}

// ApplyTransition records an engine process transition the agent
// reported, with its media.server.* event. A report the record already
// holds (same boot, sequence not newer) is ignored, so retries apply once.
func (s *Service) ApplyTransition(ctx context.Context, nodeID string, tr agentapi.EngineTransition) (*Record, error) {
	switch tr.Kind {
	case agentapi.TransitionStarted, agentapi.TransitionStopped, agentapi.TransitionCrashed, agentapi.TransitionStartFailed:
	default:
		return nil, fmt.Errorf("%w: unknown transition kind %q", ErrInvalid, tr.Kind)
	}
	if tr.BootID == "" || len(tr.BootID) > 64 || tr.Seq <= 0 || len(tr.LastAction) > 64 || len(tr.Reason) > 1024 || len(tr.Version) > 128 {
		return nil, fmt.Errorf("%w: transition needs bootId, a positive seq and bounded texts", ErrInvalid)
	}
	return s.change(ctx, nodeID, func(t *transition) error {
		e := &t.rec.Engine
		if e.BootID == tr.BootID && tr.Seq <= e.Seq {
			return errUnchanged
		}
		e.BootID, e.Seq, e.LastAction, e.ChangedAt = tr.BootID, tr.Seq, tr.LastAction, t.at
		if tr.Version != "" {
			e.Version = tr.Version
		}
		if tr.MediaServerID != "" && len(tr.MediaServerID) <= 128 {
			t.rec.MediaServerID = tr.MediaServerID
		}
		// A report over mTLS proves the agent is alive.
		t.agentOnline()
		switch tr.Kind {
		case agentapi.TransitionStarted:
			e.Process, e.PID = agentapi.EngineRunning, tr.PID
			if tr.ControlAddr != "" && len(tr.ControlAddr)+len(tr.HTTPAddr)+len(tr.RTSPAddr) < 512 {
				e.ControlAddr, e.HTTPAddr, e.RTSPAddr, e.RTPPortMin, e.RTPPortMax = tr.ControlAddr, tr.HTTPAddr, tr.RTSPAddr, tr.RTPPortMin, tr.RTPPortMax
			}
			t.mediaUp(CauseManagedProcess)
		case agentapi.TransitionStopped:
			e.Process, e.PID = agentapi.EngineStopped, 0
			t.mediaDown(CauseManagedProcess, false, true)
		case agentapi.TransitionCrashed:
			e.Process, e.PID = agentapi.EngineCrashed, 0
			t.mediaDown(CauseManagedProcess, true, false)
			t.emit(events.MediaServerCrashed, crashedData{NodeID: t.rec.NodeID, EngineNodeID: t.rec.NodeID, PreviousPID: tr.PreviousPID,
				LastAction: nullable(tr.LastAction), Reason: ReasonCrashed, OccurredAtUTC: t.at})
		case agentapi.TransitionStartFailed:
			e.Process, e.PID = agentapi.EngineStartFailed, 0
			t.mediaDown(CauseManagedProcess, true, false)
			t.emit(events.MediaServerStartFailed, startFailedData{NodeID: t.rec.NodeID, EngineNodeID: t.rec.NodeID,
				LastAction: nullable(tr.LastAction), Reason: ReasonStartFailed, OccurredAtUTC: t.at})
		}
		return nil
	})
}

// ObserveHeartbeat writes what a heartbeat changes in the record: the
// agent coming online, its version, and an engine that is running again
// after the agent was out of contact. Steady heartbeats write nothing.
func (s *Service) ObserveHeartbeat(ctx context.Context, rec *Record, hb agentapi.Heartbeat) error {
	engineUp := hb.Engine.Status == agentapi.EngineRunning
	if rec.Status == StatusOnline && rec.AgentVersion == hb.AgentVersion && rec.Hostname == hb.Hostname &&
		(rec.Engine.Media == MediaOnline) == engineUp {
		return nil
	}
	_, err := s.change(ctx, rec.NodeID, func(t *transition) error {
		r := t.rec
		if r.Status == StatusRetired {
			return fmt.Errorf("%w: %q", ErrRetired, r.NodeID)
		}
		before := *r
		t.agentOnline()
		r.AgentVersion, r.Hostname = truncate(hb.AgentVersion, 128), truncate(hb.Hostname, 253)
		// Engine transitions arrive on their own path; a heartbeat only
		// restores an engine the agent reports running while the record
		// lost it to a heartbeat timeout.
		if engineUp && r.Engine.Media != MediaOnline && r.Engine.Process == agentapi.EngineRunning {
			t.mediaUp(CauseHeartbeat)
		}
		if r.Status == before.Status && r.AgentVersion == before.AgentVersion && r.Hostname == before.Hostname && len(t.events) == 0 {
			return errUnchanged
		}
		return nil
	})
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// MarkOffline takes a node whose heartbeats stopped offline; its media
// server, if online, goes offline with media.server.stopped.
func (s *Service) MarkOffline(ctx context.Context, nodeID string, lastSeen time.Time) error {
	_, err := s.change(ctx, nodeID, func(t *transition) error {
		if t.rec.Status != StatusOnline {
			return errUnchanged
		}
		t.rec.Status, t.rec.StatusChangedAt = StatusOffline, t.at
		t.mediaDown(CauseHeartbeatTimeout, true, true)
		return nil
	})
	return err
}
