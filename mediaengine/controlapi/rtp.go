package controlapi

import (
	"errors"
	"net/http"
	"syscall"

	"github.com/svcplatform/svc/mediaengine/gbrtp"
	"github.com/svcplatform/svc/shared/engineapi"
)

func (a *api) listRTPServers(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, engineapi.RTPServerList{Servers: a.Engine.RTPServers()})
}

// openRTPServer answers POST /api/v1/rtp-servers.
func (a *api) openRTPServer(w http.ResponseWriter, r *http.Request) {
	var req engineapi.OpenRTPServerRequest
	if !decodeBody(w, r, &req) {
		return
	}
	info, err := a.Engine.OpenRTPServer(req)
	switch {
	case errors.Is(err, ErrRTPServerInvalid), errors.Is(err, gbrtp.ErrInvalidConfig):
		writeError(w, http.StatusBadRequest, engineapi.CodeInvalidBody, err.Error())
	case errors.Is(err, ErrRTPServerExists):
		writeError(w, http.StatusConflict, engineapi.CodeRTPServerExists, err.Error())
	case errors.Is(err, syscall.EADDRINUSE):
		writeError(w, http.StatusConflict, engineapi.CodeRTPPortBusy, err.Error())
	case err != nil:
		writeError(w, http.StatusInternalServerError, engineapi.CodeInternal, err.Error())
	default:
		writeJSON(w, http.StatusOK, info)
	}
}

// closeRTPServer answers DELETE /api/v1/rtp-servers/{id}.
func (a *api) closeRTPServer(w http.ResponseWriter, r *http.Request) {
	if err := a.Engine.CloseRTPServer(r.PathValue("id")); err != nil {
		writeError(w, http.StatusNotFound, engineapi.CodeRTPServerNotFound, err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
