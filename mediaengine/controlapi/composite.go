package controlapi

import (
	"errors"
	"net/http"

	"github.com/svcplatform/svc/mediaengine/composite"
	"github.com/svcplatform/svc/mediaengine/recorder"
	"github.com/svcplatform/svc/shared/engineapi"
)

// renderComposite answers POST /api/v1/recordings/composite once the
// composite is written (the render goes on if the caller leaves).
func (a *api) renderComposite(w http.ResponseWriter, r *http.Request) {
	var req engineapi.CompositeRequest
	if !decodeBody(w, r, &req) {
		return
	}
	res, err := a.Composites.Render(r.Context(), req)
	switch {
	case errors.Is(err, composite.ErrRefused):
		writeError(w, http.StatusConflict, engineapi.CodeCompositeRefused, err.Error())
	case errors.Is(err, recorder.ErrFileNotFound):
		writeError(w, http.StatusNotFound, engineapi.CodeFileNotFound, err.Error())
	case err != nil:
		writeError(w, http.StatusInternalServerError, engineapi.CodeInternal, err.Error())
	default:
		writeJSON(w, http.StatusOK, res)
	}
}
