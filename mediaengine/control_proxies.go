package mediaengine

import (
	"errors"
	"net/http"

	"github.com/svcplatform/svc/mediaengine/proxy"
	"github.com/svcplatform/svc/shared/engineapi"
)

func (e *Engine) listProxies(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, engineapi.ProxyList{Proxies: e.proxies.List()})
}

// addProxy answers POST /api/v1/proxies.
func (e *Engine) addProxy(w http.ResponseWriter, r *http.Request) {
	var req engineapi.AddProxyRequest
	if !decodeBody(w, r, &req) {
		return
	}
	info, err := e.proxies.Add(req)
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
func (e *Engine) removeProxy(w http.ResponseWriter, r *http.Request) {
	if err := e.proxies.Remove(r.PathValue("id")); err != nil {
		writeError(w, http.StatusNotFound, engineapi.CodeProxyNotFound, "no proxy "+r.PathValue("id"))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
