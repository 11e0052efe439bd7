package controlapi

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/svcplatform/svc/shared/engineapi"
)

// smokeTestRTSP answers POST /api/v1/smoke-tests/rtsp.
func (a *api) smokeTestRTSP(w http.ResponseWriter, r *http.Request) {
	var req engineapi.SmokeTestRequest
	if !decodeBody(w, r, &req) {
		return
	}
	u, err := url.Parse(req.URL)
	if err != nil || (u.Scheme != "rtsp" && u.Scheme != "rtsps") || u.Host == "" {
		writeError(w, http.StatusBadRequest, engineapi.CodeInvalidBody, "url must be an rtsp:// or rtsps:// URL")
		return
	}
	switch req.Transport {
	case "", "auto", "tcp", "udp":
	default:
		writeError(w, http.StatusBadRequest, engineapi.CodeInvalidBody, "transport must be auto, tcp or udp")
		return
	}
	timeout := time.Duration(req.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	timeout = min(timeout, 30*time.Second)
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	writeJSON(w, http.StatusOK, a.Engine.SmokeTestRTSP(ctx, req))
}
