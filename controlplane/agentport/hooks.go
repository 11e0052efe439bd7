package agentport

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/shared/agentapi"
)

// Hook is one engine hook as received on the agent port.
type Hook struct {
	NodeID        string
	MediaServerID string
	HookName      string
	// Body is the engine's JSON, untouched.
	Body       json.RawMessage
	ReceivedAt time.Time
}

// HookInbox takes the engines' hooks (the events module keeps them and
// turns them into engine.webhook.* events).
type HookInbox interface {
	Receive(ctx context.Context, h Hook) error
}

// hookAllow is the answer that lets the engine go ahead, in the engine's
// own convention.
var hookAllow = map[string]any{"code": 0, "msg": "success"}

// handleHook logs the hook, hands it to the inbox and allows it. A hook the
// inbox cannot take is answered 503, which makes on_play and on_publish
// fail closed in the engine.
func (s *Server) handleHook(w http.ResponseWriter, r *http.Request, rec *nodes.Record) {
	name, ok := hookName(r)
	if !ok {
		writeError(w, http.StatusBadRequest, agentapi.CodeInvalid, "hook names are 1-64 letters, digits or underscores")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, agentapi.MaxBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, agentapi.CodeInvalid, "hook body too large")
		return
	}
	var fields struct {
		App    string `json:"app"`
		Stream string `json:"stream"`
	}
	if err := json.Unmarshal(body, &fields); err != nil {
		writeError(w, http.StatusBadRequest, agentapi.CodeInvalid, "the hook body must be a JSON object")
		return
	}
	s.d.Log.Info("engine hook", zap.String("agentNode", rec.NodeID), zap.String("hook", name), zap.String("app", fields.App), zap.String("stream", fields.Stream))
	if inbox := s.hooks.Load(); inbox != nil {
		h := Hook{NodeID: rec.NodeID, MediaServerID: rec.MediaServerID, HookName: name, Body: body, ReceivedAt: time.Now().UTC()}
		if err := (*inbox).Receive(r.Context(), h); err != nil {
			s.d.Log.Error("engine hook not taken by the inbox", zap.String("agentNode", rec.NodeID), zap.String("hook", name), zap.Error(err))
			writeError(w, http.StatusServiceUnavailable, agentapi.CodeUnavailable, "the hook could not be recorded; try again")
			return
		}
	}
	writeJSON(w, http.StatusOK, hookAllow)
}
