package controlapi

import (
	"errors"
	"net/http"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/player"
	"github.com/svcplatform/svc/mediaengine/proxy"
	"github.com/svcplatform/svc/shared/engineapi"
)

// listStreams answers GET /api/v1/streams?vhost=&app=&stream=.
func (a *api) listStreams(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	out := engineapi.StreamList{Streams: []engineapi.StreamInfo{}}
	for _, s := range a.Hub.Streams() {
		p := s.Path()
		if (q.Get("vhost") != "" && p.Vhost != q.Get("vhost")) || (q.Get("app") != "" && p.App != q.Get("app")) ||
			(q.Get("stream") != "" && p.Stream != q.Get("stream")) {
			continue
		}
		out.Streams = append(out.Streams, s.Info())
	}
	writeJSON(w, http.StatusOK, out)
}

// closeStream answers POST /api/v1/streams/close: the publisher is cut and
// the players disconnected. A pulled or demo stream reconnects by its own
// policy; remove the proxy to stop it for good.
func (a *api) closeStream(w http.ResponseWriter, r *http.Request) {
	var req engineapi.CloseStreamRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.App == "" || req.Stream == "" {
		writeError(w, http.StatusBadRequest, engineapi.CodeInvalidBody, "app and stream are required")
		return
	}
	p := media.Path{Vhost: req.Vhost, App: req.App, Stream: req.Stream}
	s, ok := a.Hub.Stream(p)
	if !ok {
		writeError(w, http.StatusNotFound, engineapi.CodeStreamNotFound, "no live stream "+hub.Key(p).String())
		return
	}
	info := s.Info()
	s.Close()
	writeJSON(w, http.StatusOK, info)
}

// listPlayers answers GET /api/v1/players?app=&stream=&protocol=&leaseId=&ticket=.
func (a *api) listPlayers(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := player.Filter{App: q.Get("app"), Stream: q.Get("stream"), Protocol: q.Get("protocol"), LeaseID: q.Get("leaseId"), Ticket: q.Get("ticket")}
	writeJSON(w, http.StatusOK, engineapi.PlayerList{Players: a.Players.Infos(f)})
}

// kickPlayers answers POST /api/v1/players/kick: one player by id, or all
// players of a lease, a ticket or a stream.
func (a *api) kickPlayers(w http.ResponseWriter, r *http.Request) {
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
		a.Engine.ForgetLease(req.LeaseID)
	}
	n := a.Players.Kick(player.Filter{ID: player.ID(req.PlayerID), LeaseID: req.LeaseID, Ticket: req.Ticket, App: req.App, Stream: req.Stream})
	if n == 0 && req.PlayerID != "" {
		writeError(w, http.StatusNotFound, engineapi.CodeNotFound, "no player "+req.PlayerID)
		return
	}
	writeJSON(w, http.StatusOK, engineapi.KickResult{Kicked: n})
}

func (a *api) listProxies(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, engineapi.ProxyList{Proxies: a.Proxies.List()})
}

// addProxy answers POST /api/v1/proxies.
func (a *api) addProxy(w http.ResponseWriter, r *http.Request) {
	var req engineapi.AddProxyRequest
	if !decodeBody(w, r, &req) {
		return
	}
	info, err := a.Proxies.Add(req)
	switch {
	case errors.Is(err, proxy.ErrInvalid):
		writeError(w, http.StatusBadRequest, engineapi.CodeInvalidBody, err.Error())
	case errors.Is(err, proxy.ErrUnsupported):
		writeError(w, http.StatusBadRequest, engineapi.CodeUnsupported, err.Error())
	case errors.Is(err, proxy.ErrExists), errors.Is(err, proxy.ErrPathTaken):
		writeError(w, http.StatusConflict, engineapi.CodeProxyExists, err.Error())
	case err != nil:
		writeError(w, http.StatusInternalServerError, engineapi.CodeInternal, err.Error())
	default:
		writeJSON(w, http.StatusOK, info)
	}
}

// removeProxy answers DELETE /api/v1/proxies/{id}.
func (a *api) removeProxy(w http.ResponseWriter, r *http.Request) {
	if err := a.Proxies.Remove(r.PathValue("id")); err != nil {
		writeError(w, http.StatusNotFound, engineapi.CodeProxyNotFound, "no proxy "+r.PathValue("id"))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
