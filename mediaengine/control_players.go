package mediaengine

import (
	"net/http"

	"github.com/svcplatform/svc/mediaengine/player"
	"github.com/svcplatform/svc/shared/engineapi"
)

// listPlayers answers GET /api/v1/players?app=&stream=&protocol=&leaseId=&ticket=.
func (e *Engine) listPlayers(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := player.Filter{App: q.Get("app"), Stream: q.Get("stream"), Protocol: q.Get("protocol"), LeaseID: q.Get("leaseId"), Ticket: q.Get("ticket")}
	writeJSON(w, http.StatusOK, engineapi.PlayerList{Players: e.players.Infos(f)})
}

// kickPlayers answers POST /api/v1/players/kick: one player by id, or all
// players of a lease, a ticket or a stream.
func (e *Engine) kickPlayers(w http.ResponseWriter, r *http.Request) {
	var req engineapi.KickRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req == (engineapi.KickRequest{}) {
		writeError(w, http.StatusBadRequest, engineapi.CodeInvalidBody, "name the players to kick: playerId, leaseId, ticket, or app and stream")
		return
	}
	if req.LeaseID != "" {
		// An ended lease admits no new player from a cached answer either.
		e.hooks.Load().ForgetLease(req.LeaseID)
	}
	n := e.players.Kick(player.Filter{ID: player.ID(req.PlayerID), LeaseID: req.LeaseID, Ticket: req.Ticket, App: req.App, Stream: req.Stream})
	if n == 0 && req.PlayerID != "" {
		writeError(w, http.StatusNotFound, engineapi.CodeNotFound, "no player "+req.PlayerID)
		return
	}
	writeJSON(w, http.StatusOK, engineapi.KickResult{Kicked: n})
}
