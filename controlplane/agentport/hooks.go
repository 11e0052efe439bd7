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
	"github.com/svcplatform/svc/shared/engineapi"
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

// HookInbox takes the engines' hooks and answers them: on_play and
// on_publish get their allow or deny here, and every hook is kept as an
// engine.webhook.* event.
type HookInbox interface {
	Receive(ctx context.Context, h Hook) (engineapi.HookAnswer, error)
}

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
	if !engineapi.OpensObject(body) || !json.Valid(body) {
		writeError(w, http.StatusBadRequest, agentapi.CodeInvalid, "the hook body must be a JSON object")
		return
	}
	// Every hook is kept as an engine.webhook event (the webhook inbox);
	// the log line is for debugging, not a second record, and its fields
	// are decoded only when it is written.
	if ce := s.d.Log.Check(zap.DebugLevel, "engine hook"); ce != nil {
		var fields struct {
			App    string `json:"app"`
			Stream string `json:"stream"`
		}
		json.Unmarshal(body, &fields)
		ce.Write(zap.String("agentNode", rec.NodeID), zap.String("hook", name), zap.String("app", fields.App), zap.String("stream", fields.Stream))
	}
	inbox := s.hooks.Load()
	if inbox == nil {
		// Nothing decides yet (a node still starting): the engine fails
		// closed on a 503 for on_play and on_publish.
		writeError(w, http.StatusServiceUnavailable, agentapi.CodeUnavailable, "the control node is not ready for hooks")
		return
	}
	h := Hook{NodeID: rec.NodeID, MediaServerID: rec.MediaServerID, HookName: name, Body: body, ReceivedAt: time.Now().UTC()}
	ans, err := (*inbox).Receive(r.Context(), h)
	if err != nil {
		s.d.Log.Error("engine hook not taken", zap.String("agentNode", rec.NodeID), zap.String("hook", name), zap.Error(err))
		writeError(w, http.StatusServiceUnavailable, agentapi.CodeUnavailable, "the hook could not be handled; try again")
		return
	}
	writeJSON(w, http.StatusOK, ans)
}
