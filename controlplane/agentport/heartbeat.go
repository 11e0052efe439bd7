package agentport

import (
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/shared/agentapi"
)

// handleHeartbeat keeps the figures in memory, passes them to the other
// control nodes, and writes to the store only what changed (the node coming
// online, its version, an engine back after a timeout).
func (s *Server) handleHeartbeat(w http.ResponseWriter, r *http.Request, rec *nodes.Record) {
	var hb agentapi.Heartbeat
	if err := readJSON(w, r, &hb); err != nil {
		s.fail(w, err)
		return
	}
	if len(hb.Host.Disks) > agentapi.MaxDisks || len(hb.Host.Interfaces) > agentapi.MaxInterfaces {
		writeError(w, http.StatusBadRequest, agentapi.CodeInvalid, "too many disks or interfaces in one heartbeat")
		return
	}
	now := time.Now().UTC()
	s.d.Presence.Record(rec.NodeID, hb, now)
	if s.d.Broadcast != nil {
		s.d.Broadcast(rec.NodeID, hb, now)
	}
	if err := s.d.Nodes.ObserveHeartbeat(r.Context(), rec, hb); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, agentapi.HeartbeatResponse{ServerURLs: s.d.ServerURLs(r.Context())})
}

// handleTransition records an engine process transition and its event.
func (s *Server) handleTransition(w http.ResponseWriter, r *http.Request, rec *nodes.Record) {
	var tr agentapi.EngineTransition
	if err := readJSON(w, r, &tr); err != nil {
		s.fail(w, err)
		return
	}
	after, err := s.d.Nodes.ApplyTransition(r.Context(), rec.NodeID, tr)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.d.Log.Info("engine transition", zap.String("agentNode", rec.NodeID), zap.String("kind", tr.Kind), zap.Int("pid", tr.PID),
		zap.Int("previousPid", tr.PreviousPID), zap.String("lastAction", tr.LastAction), zap.String("media", after.Engine.Media))
	writeJSON(w, http.StatusOK, struct{}{})
}
