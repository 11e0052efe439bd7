package mediaengine

import (
	"net/http"

	"github.com/svcplatform/svc/shared/engineapi"
)

func (e *Engine) getConfig(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, e.cfg.Load())
}

// putConfig answers PUT /api/v1/config: the body is decoded over the
// running configuration (fields left out keep their values), validated,
// written to the file and applied.
func (e *Engine) putConfig(w http.ResponseWriter, r *http.Request) {
	next := *e.cfg.Load()
	if !decodeBody(w, r, &next) {
		return
	}
	if err := next.Validate(); err != nil {
		writeError(w, http.StatusBadRequest, engineapi.CodeInvalidConfig, err.Error())
		return
	}
	if err := e.writeConfig(next); err != nil {
		writeError(w, http.StatusInternalServerError, engineapi.CodeInternal, err.Error())
		return
	}
	res, err := e.apply(next)
	if err != nil {
		writeError(w, http.StatusBadRequest, engineapi.CodeInvalidConfig, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (e *Engine) stats(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, e.Stats())
}
