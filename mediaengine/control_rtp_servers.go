package mediaengine

import (
	"errors"
	"net/http"
	"syscall"

	"github.com/svcplatform/svc/mediaengine/gbrtp"
	"github.com/svcplatform/svc/shared/engineapi"
)

func (e *Engine) listRTPServers(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, engineapi.RTPServerList{Servers: e.rtpServers.list()})
}

// openRTPServer answers POST /api/v1/rtp-servers.
func (e *Engine) openRTPServer(w http.ResponseWriter, r *http.Request) {
	var req engineapi.OpenRTPServerRequest
	if !decodeBody(w, r, &req) {
		return
	}
	info, err := e.rtpServers.open(req)
	switch {
	case errors.Is(err, errRTPServerInvalid), errors.Is(err, gbrtp.ErrInvalidConfig):
		writeError(w, http.StatusBadRequest, engineapi.CodeInvalidBody, err.Error())
	case errors.Is(err, errRTPServerExists):
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
func (e *Engine) closeRTPServer(w http.ResponseWriter, r *http.Request) {
	if err := e.rtpServers.close(r.PathValue("id")); err != nil {
		writeError(w, http.StatusNotFound, engineapi.CodeRTPServerNotFound, err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
