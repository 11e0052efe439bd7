package agentport

import (
	"net/http"
	"time"

	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/shared/agentapi"
)

// MaxPollWait bounds a long poll; agents ask for less than their HTTP
// client's timeout.
const MaxPollWait = 60 * time.Second

func (s *Server) handlePoll(w http.ResponseWriter, r *http.Request, rec *nodes.Record) {
	var req agentapi.PollRequest
	if err := readJSON(w, r, &req); err != nil {
		s.fail(w, err)
		return
	}
	wait := time.Duration(req.WaitMillis) * time.Millisecond
	if wait < 0 || wait > MaxPollWait {
		writeError(w, http.StatusBadRequest, agentapi.CodeInvalid, "waitMillis must be within 0..60000")
		return
	}
	cmds, err := s.d.Commands.Poll(r.Context(), rec.NodeID, wait, req.Max)
	if err != nil {
		s.fail(w, err)
		return
	}
	if cmds == nil {
		cmds = []agentapi.Command{}
	}
	writeJSON(w, http.StatusOK, agentapi.PollResponse{Commands: cmds})
}

func (s *Server) handleRunning(w http.ResponseWriter, r *http.Request, rec *nodes.Record) {
	var ack agentapi.CommandRunning
	if err := readJSON(w, r, &ack); err != nil {
		s.fail(w, err)
		return
	}
	resp, err := s.d.Commands.Running(r.Context(), rec.NodeID, ack)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) handleResult(w http.ResponseWriter, r *http.Request, rec *nodes.Record) {
	var res agentapi.CommandResult
	if err := readJSON(w, r, &res); err != nil {
		s.fail(w, err)
		return
	}
	if _, err := s.d.Commands.Complete(r.Context(), rec.NodeID, res); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

// handleSecret answers the sealed secret (a camera URL with credentials)
// of a command this node's agent is running, and only then; the answer is
// never cached or logged.
func (s *Server) handleSecret(w http.ResponseWriter, r *http.Request, rec *nodes.Record) {
	var req agentapi.CommandSecretRequest
	if err := readJSON(w, r, &req); err != nil {
		s.fail(w, err)
		return
	}
	secret, err := s.d.Commands.Secret(r.Context(), rec.NodeID, req.CommandID, req.Attempt)
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, agentapi.CommandSecretResponse{URL: secret})
}
